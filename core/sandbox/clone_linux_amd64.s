#include "textflag.h"

// func rawClone(flags uintptr) (pid uintptr, err syscall.Errno)
//
// clone(flags, 0, 0, 0, 0) for a child that shares the caller's memory
// and stack (CLONE_VM|CLONE_VFORK): the return address is kept in R12
// across the system call, not on the stack the child goes on to use, so
// that the parent, resumed once the child exec'd or exited, returns to
// its caller (as the standard library's rawVforkSyscall does).
TEXT ·rawClone(SB),NOSPLIT|NOFRAME,$0-24
	MOVQ	flags+0(FP), DI
	MOVQ	$0, SI
	MOVQ	$0, DX
	MOVQ	$0, R10
	MOVQ	$0, R8
	MOVQ	$0, R9
	MOVQ	$56, AX	// SYS_clone
	POPQ	R12
	SYSCALL
	PUSHQ	R12
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$-1, pid+8(FP)
	NEGQ	AX
	MOVQ	AX, err+16(FP)
	RET
ok:
	MOVQ	AX, pid+8(FP)
	MOVQ	$0, err+16(FP)
	RET
