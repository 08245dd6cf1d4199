#include "textflag.h"

// func rawClone(flags uintptr) (pid uintptr, err syscall.Errno)
//
// clone(flags, 0, 0, 0, 0) for a child that shares the caller's memory
// and stack (CLONE_VM|CLONE_VFORK): a leaf without a frame, its return
// address in LR, so that the child's use of the stack cannot change where
// the parent returns (as the standard library's rawVforkSyscall does).
TEXT ·rawClone(SB),NOSPLIT,$0-24
	MOVD	flags+0(FP), R0
	MOVD	$0, R1
	MOVD	$0, R2
	MOVD	$0, R3
	MOVD	$0, R4
	MOVD	$0, R5
	MOVD	$220, R8	// SYS_clone
	SVC
	CMN	$4095, R0
	BCC	ok
	MOVD	$-1, R4
	MOVD	R4, pid+8(FP)
	NEG	R0, R0
	MOVD	R0, err+16(FP)
	RET
ok:
	MOVD	R0, pid+8(FP)
	MOVD	ZR, err+16(FP)
	RET
