// Package command analyzes a shell command line for the gate: it parses the
// line as bash and reports every program the line can run and every file
// its redirections can write, or says why the line cannot be judged.
//
// The analysis works on parsed words, never on a normalized string: quotes
// and backslashes are removed ("go" 'test' and r\m are go, test and rm),
// and a word that is only known when the line runs is marked non-literal
// rather than guessed.
//
// # Commands
//
// [Analyze] lists every simple command anywhere in the line: in lists (; &&
// || &), pipelines, subshells, brace groups, command substitutions $(…) and
// `…` (in arguments, double quotes, assignments, redirection targets and
// unquoted heredoc bodies), process substitutions <(…) and >(…), if, while,
// until, for, select and case, [[ ]] and arithmetic, function bodies,
// coproc, time and !. Declarations (declare, local, export, readonly,
// typeset) and let are listed as commands too.
//
// A function defined in the line has its body listed where it is defined.
// A later call of that name directly by the shell is not listed again,
// because the body is what runs; a call through a wrapper, a definition
// that may not have run (in a branch, a loop or a subshell), or one removed
// by unset, does not count, and the name is judged as a program.
//
// # Words
//
// [Word.Literal] is false when the program would not receive exactly
// [Word.Text]: parameter, command, arithmetic and process expansions,
// $"…", an unquoted leading ~ or ~ after = or :, brace expansion {a,b},
// unquoted glob characters * ? and [ … ], and a stray unquoted $ (which zsh
// may expand). Text is then the word's source text. $'…' is decoded when
// every escape has a certain meaning. A rule can match a non-literal word
// only as a wildcard; the program name (Args[0]) is always literal.
//
// # Wrappers
//
// Programs that run another program given as arguments are unwrapped: the
// inner command is listed with the wrapper names in [Command.Wrappers],
// outermost first, so a rule can deny sudo or a reason can say "under
// timeout". Each wrapper's real options are parsed; when they cannot be
// parsed with certainty (an unknown option, a computed word that could be
// an option, an option value that may split into several words) the line
// is unanalyzable. The wrappers are timeout, nice, nohup, env (its NAME=VALUE
// words are checked like assignments; -S and -P are refused), command
// (command -v and -V only look a name up), builtin, exec, time, xargs,
// stdbuf, setsid, ionice, chrt, taskset, unbuffer, sudo and doas (VAR=value
// words checked; -s and -i without a command refused), su -c, watch (its
// words are joined and parsed as sh -c does, unless -x), flock (including
// flock FILE -c STRING), and busybox and toybox applets. xargs runs its
// command with input words: they appear as one non-literal word "{}"
// appended to the command, or replace every word containing the -I string.
// With no command xargs runs echo. find is listed itself, and the command
// of each -exec, -execdir, -ok and -okdir is listed with the wrapper
// "find"; a word containing {} is non-literal. A wrapper is only
// recognized by its bare name or in a system directory (/bin, /usr/bin,
// /usr/local/bin, /sbin, /usr/sbin, /usr/local/sbin, /opt/homebrew/bin):
// ./timeout is someone's script and is judged as itself.
//
// sh, bash, dash, zsh, ksh, mksh, ash, yash and posh given -c and a literal
// string have the string parsed as bash and its commands listed, with the
// shell as a wrapper, up to 8 shells deep.
//
// # Writes
//
// Each redirection that can write (>, >>, >|, &>, &>>, <>, and >&word when
// word is not a descriptor number) records a [Write]; descriptor
// duplications (2>&1, >&-) and /dev/null, /dev/stdout, /dev/stderr and
// /dev/fd/N do not. So do find's -fprint, -fprint0, -fls and -fprintf, and
// time -o. A relative path is joined onto each directory the shell may be
// in after cd, pushd and popd earlier in the line (cd may fail, so the
// starting directory stays possible); when a directory change cannot be
// followed (cd $X, cd ~, cd -, a loop that changes directory, a function
// that does) relative writes are non-literal.
//
// # Unanalyzable lines
//
// [Analyze] returns an [*UnanalyzableError] whose Code names the reason when:
//
//   - the line is not valid bash (parse-error), not valid UTF-8
//     (invalid-utf8), or holds a control character other than tab and
//     newline (control-character);
//   - it is larger than 512 KiB, nests brackets more than 128 deep,
//     statements or words more than 64 deep, shells more than 8 deep, or
//     runs more than 10,000 commands (too-complex);
//   - it runs eval (eval), source or . (source), alias with arguments
//     (alias), trap with an action (trap), or enable, hash -p, fc without
//     -l, compgen -C or mapfile -C (builtin);
//   - a program name is computed when the line runs: $CMD, "$X", $(echo rm)
//     (dynamic-command);
//   - program text is computed when the line runs: sh -c "$X", python -c
//     "$(…)", awk "$P", watch $X, or env -S (dynamic-code);
//   - an interpreter takes its program from standard input: with no script
//     or program argument (curl … | sh, python3 <<EOF, bash < script.sh),
//     with "-", -s or /dev/stdin (node -, bash -s), interactively while the
//     line feeds its input, from a process substitution (bash <(curl …)),
//     or with options that cannot be parsed while its input is fed. The
//     interpreters are the shells above plus fish, csh and tcsh, python,
//     pythonN[.M], pypy, node, deno, bun, perl, ruby, php, lua, R, Rscript,
//     osascript, pwsh, powershell and awk (awk with a program argument is
//     fine) (interpreter-stdin);
//   - a variable from [RiskyEnvVars] is assigned anywhere: as a prefix
//     (LD_PRELOAD=x cmd), alone, through export, declare, local, readonly,
//     env, sudo, xargs, read, mapfile, printf -v, getopts, for, ${X:=…},
//     arithmetic or declare -n (risky-env);
//   - a value the gate cannot see is evaluated as code: bash evaluates
//     variables in arithmetic ($((x)), ((x)), let, array subscripts, [[ -eq
//     ]], declare -i) and names given to read, printf -v, declare, test -v
//     and ${!x}, and runs command substitutions in any array subscript
//     there, so x='a[$(rm -rf ~)]'; echo $((x)) runs rm. A variable
//     assigned in the line from anything but plain text, or filled by read,
//     for, getopts, the positional parameters or $_, may not be evaluated
//     this way; ${x@P} is refused outright (value-as-code);
//   - a wrapper's options cannot be parsed with certainty, find is given a
//     computed word that could become -exec, or su -s is used
//     (wrapper-options);
//   - a word holds an extended glob such as *(…) or @(…), which zsh reads
//     as a glob qualifier that can run code (extglob).
//
// Other plain assignments (FOO=bar go test), exec with only redirections,
// and $((…)) over literal numbers and variables assigned plain values are
// fine.
//
// # Limits
//
// The analysis models bash. A host that runs the line with another shell
// may read rare constructs differently; zsh glob qualifiers are refused
// (see extglob). Inherited state is trusted: aliases and functions already
// defined in the shell, exported variables such as CDPATH, and files the
// commands read (scripts, Makefiles, configs) are outside the line. Other
// programs that run code from their arguments (ssh host cmd, git -c
// alias.x=!cmd, make, python -c) are listed as themselves; a rule that
// allows them allows what they run.
package command
