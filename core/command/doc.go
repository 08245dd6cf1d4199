// Package command analyzes a shell command line for the gate: it parses the
// line as bash and reports every program the line can run, every file its
// redirections and granted programs' options can write, and the files those
// programs read, or says why the line cannot be judged. The principle is an
// allow-list: a construct the analysis does not fully understand makes the
// line unanalyzable, never a pass.
//
// The analysis works on parsed words, never on a normalized string: quotes
// and backslashes are removed ("go" 'test' and r\m are go, test and rm),
// and a word that is only known when the line runs is marked non-literal
// rather than guessed.
//
// # Commands
//
// [Analyze] lists every simple command anywhere in the line: in lists (; &&
// || & and newlines), pipelines, subshells, brace groups, command
// substitutions $(…) and `…` (in arguments, double quotes, assignments,
// redirection targets and unquoted heredoc bodies), process substitutions
// <(…) and >(…), if, while, until, for, select and case, [[ ]] and
// arithmetic, function bodies, coproc, time and !. Declarations (declare,
// local, export, readonly, typeset) and let are listed as commands too.
//
// A function defined in the line has its body listed where it is defined.
// A later call of that name made directly by the shell is not listed again,
// because the body is what runs. A call through a wrapper or command, a
// definition that may not have run (in a branch or a subshell), or one
// removed by unset does not count: the name is then judged as a program.
//
// # Words
//
// [Word.Literal] is false when the program would not receive exactly
// [Word.Text]: parameter, command, arithmetic and process expansions, $"…",
// an unquoted ~ at the start of a word or after = or :, brace expansion
// ({a,b}, {1..3}), unquoted glob characters (* ? and [ with a later ]), and
// a stray unquoted $ before more text (which zsh may expand: $~x, $=x). Text is then the word's source
// text. $'…' is decoded when every escape has a certain meaning. A rule can
// match a non-literal word only as a wildcard; a program name (Args[0]) is
// always literal.
//
// # Wrappers
//
// Programs that run another program given as arguments are unwrapped: the
// inner command is listed with the wrapper names in [Command.Wrappers],
// outermost first, so a rule can deny sudo or a reason can say "under
// timeout". The wrapper itself is not listed. Each wrapper's real options
// are parsed; when they cannot be parsed with certainty (an unknown option,
// a computed word that could be an option, an option value that may split
// into several words) the line is unanalyzable.
//
// The wrappers are timeout, nice, nohup, env, command, builtin, exec, time,
// xargs, stdbuf, setsid, ionice, chrt, taskset, unbuffer, sudo, doas, su -c,
// watch, flock, busybox and toybox. sudo, doas and su run the command as
// another user: the gate requires a rule that allows the wrapper itself.
// Other privilege tools (pkexec, run0, runuser, setpriv, chroot, unshare,
// nsenter, capsh, sg, systemd-run) are not unwrapped: they are listed as
// themselves and need a rule of their own. env, sudo and xargs --process-slot-var
// set variables, which are checked like any assignment; env -S and env -P
// are refused. command -v and -V only look a name up. exec with only
// redirections changes the shell's own descriptors and is not listed.
// watch joins its words and runs them with sh -c, unless -x. flock FILE -c
// STRING runs the string with sh -c. sudo -s, sudo -i and doas -s without
// a command start a shell that reads standard input, and are refused.
//
// xargs runs its command with words read from input: they appear as one
// non-literal word "{}" appended to the command, or they turn every word
// containing the -I string non-literal. With no command xargs runs echo.
// find is listed itself, and the command of each -exec, -execdir, -ok and
// -okdir is listed under the wrapper "find", with every word containing {}
// non-literal; find refuses computed words that could become an action
// such as -exec or end one (only "$HOME…", "$PWD…", ~ and words starting
// with a literal character other than - ( ) ! , ; + are accepted).
//
// A shell given -c and a literal string has the string parsed in the
// language of the shell that runs it, and its commands listed under the
// shell's name, up to 8 shells deep: bash and rbash as bash, mksh and lksh
// as mksh, and sh, dash, ash, posh and the strings of watch, flock and su
// (run by /bin/sh or the user's shell, dash or bash) as POSIX sh, which
// refuses bash's extensions; $'…' and $"…" are refused on top, because dash
// reads them as a dollar sign and a quoted string (sh -c "echo $'x' ;
// rm -rf ~ ; # '" runs rm in dash and not in bash). zsh, ksh, ksh93 and
// yash are not modeled and refused (shell-option). Shell options that load
// files or change how the string is read are refused too (shell-option):
// --rcfile, --init-file, -i (rc files), -l and --login (profile files),
// --debugger, -k and -o keyword (NAME=value arguments become assignments),
// -O and +O (shopt options), and -o with any option but errexit, nounset,
// pipefail, xtrace, verbose, noclobber, noglob, noexec and the like; set -k
// and set -o keyword in the line itself likewise.
//
// A wrapper or shell is recognized by its bare name or in a system
// directory (/bin, /usr/bin, /usr/local/bin, /sbin, /usr/sbin,
// /usr/local/sbin, /opt/homebrew/bin): ./timeout is someone's script and
// is listed as itself, arguments and all.
//
// # Program models
//
// Each program the gate judges by its arguments has a model (model.go,
// models*.go): its options and subcommands as getopt, Go's flag package or
// git's parse-options read them, what each option's value and each operand
// is to the program (a file it reads or writes, a directory it works in or
// lists, a program it runs, shell code, or no file), and what it reads when
// no operand names a file. [ModeledPrograms] lists them; [Modeled] reports
// one. A model is an allow-list: an option or subcommand it does not list
// makes the line unanalyzable (unknown-option), since the gate cannot tell
// what it does. go test passes flags the testing package does not define to
// the package's tests, and go vet the flags of its analyzers.
//
// An option that runs another program lists that program as a command,
// wrapped by the first (go -exec, -toolexec, -vettool, sort
// --compress-program, rg --pre, rsync -e, install --strip-program, git bisect
// run, diff3 --diff-program); its arguments are the program's choice, so its
// own model does not apply. git rebase -x and split --filter give shell code,
// judged like sh -c. An option that runs a program the analysis cannot list,
// or loads settings it cannot see, makes the line unanalyzable
// (program-option): go env -w, go bug, go tool with a tool the
// model does not know, go -ldflags naming -extld, -extldflags or -extar, git
// -c or git config with a key that can run a program or load files,
// --config-env, --exec-path=DIR, --git-dir, --work-tree, --upload-pack,
// --receive-pack, --exec, clone and init --template, a merge strategy outside
// the distribution's, git grep -O, git help -w, sed's e command and s///e
// flag, sed -f without --sandbox, awk's system(), pipes, @load, @include and
// -f without gawk's --sandbox, make --eval, npm and npx options that name a
// shell, node options, a prefix, a settings file or a package to run, npm
// config set, cargo --config, -Z and rustc, pytest -p (but -p no:NAME), -c,
// -o, --pyargs and --tx, tar --to-command, -I, -F, --checkpoint-action and a
// remote archive, curl -K and --engine, wget -e and --config, ssh -F, -I, -A
// and -o with a key that runs a program or loads files, rsync --rsync-path
// and -M. A word computed when the line runs that may be an option is refused
// when the program has such an option (sort "$X").
//
// git -C DIR with a literal relative DIR that does not climb out is listed
// without -C DIR, so git -C sub status matches Bash(git status:*), as are
// git's options that change only output (-c color.ui=…, --no-pager); the
// command is listed as running in DIR (Command.Dirs).
//
// # Writes
//
// Each redirection that can write (>, >>, >|, &>, &>>, <>, and >&word when
// word is not a descriptor number) records a [Write]; descriptor
// duplications (2>&1, >&-), > >(…) and the targets /dev/null, /dev/stdout,
// /dev/stderr, /dev/tty and /dev/fd/N do not. An option or operand a model
// says is written records a Write too (go build -o, the profile flags
// before and after go test -args, go tool cover -o, sed -i and w, awk's
// print > "file", sort -o, uniq IN OUT, tee, dd of=, the destination of cp,
// mv, ln and install and each source's name in a destination directory,
// touch, mkdir, rm, chmod, gofmt -w, curl -o, wget -O, pytest --junitxml),
// with Tree set for a program that writes or removes everything below it
// (rm -r, cp -r, mv, chmod -R, git rm -r, find -delete, rsync), and Unknown
// for files whose names only the program knows (go install, go clean
// -modcache, go telemetry on, tar x, patch, git apply, split, curl -O, wget,
// cargo install, npm link). time -o and history -a and -w record writes too.
// A relative path is joined onto each directory the shell may be in after
// cd, pushd and popd earlier in the line; since cd may fail, the starting
// directory stays possible. cd ~/x and cd alone are followed to a path
// below the home directory, which the gate expands. When a directory change
// cannot be followed (cd $X, cd -, popd, a loop or a function that changes
// directory) relative writes after it are Unknown, as are relative writes
// in function bodies of a line that changes directory anywhere.
//
// # Reads
//
// Reads are recorded like writes: input redirections (<, <>, $(<file)),
// and the operands and option values a model says are read (cat, head,
// grep after its pattern, sort, diff, jq after its filter, grep -f, diff
// --from-file, jq --rawfile, curl -T and -d @file, a file: URL given to
// curl, wget -i, ssh -i, touch -r, git commit -F, make -f, go -modfile).
// What a program reads when it names nothing is recorded as a read of "."
// in the directory it runs in: a listing or a place it works in, with
// Read.Names set (ls, du, tree, find, git, go, make, npm, cargo, pytest),
// or every file below it (grep -r, rg). Paths a program derives are
// Unknown reads: the files a list names (sort, wc and du --files0-from, tar
// -T, rsync --files-from, find -files0-from, sha256sum -c, file -f, go
// -overlay), the paths xargs and find -exec fill in, awk's getline, the
// modules a jq filter imports, and any path of a program given a computed
// word that may be one of its options.
//
// # Resource bombs
//
// A line made only of builtins and functions needs no rule, so lines that
// never end are refused (resource-bomb): a function that calls itself,
// directly or through other functions of the line (:(){ :|:& };:), a while,
// until or for ((;;)) loop whose condition is always true and whose body
// holds no break, return, exit, exec or kill, and a brace expansion of more
// than 2^20 words.
//
// # Unanalyzable lines
//
// [Analyze] returns an [*UnanalyzableError] whose Code names the reason when:
//
//   - the line is not valid bash (parse-error), not valid UTF-8
//     (invalid-utf8), or holds a control character other than tab and
//     newline, which the parser and bash read differently (control-character);
//   - it is larger than 512 KiB, nests brackets more than 128 deep,
//     statements or words more than 64 deep, or shells more than 8 deep, or
//     runs more than 10,000 commands (too-complex);
//   - it runs eval (eval), source or . (source), alias with arguments
//     (alias), trap with an action (trap), or enable with arguments, hash
//     -p, fc without -l, compgen -C, mapfile -C or jobs -x (builtin);
//   - a program name is computed when the line runs: $CMD, "$X", $(echo rm),
//     ~/bin/tool, {rm,x} (dynamic-command);
//   - program text is computed when the line runs: sh -c "$X", python -c
//     "$(…)", awk "$P", watch $X, xargs -I% sh -c '… %', or env -S
//     (dynamic-code); so is a script produced by process substitution
//     (bash <(curl …));
//   - an interpreter takes its program from standard input: with no script
//     or program argument (curl … | sh, python3 <<EOF, bash < script.sh),
//     with "-", -s or /dev/stdin (node -, bash -s), interactively while the
//     line feeds its input, or with options that cannot be parsed while the
//     line feeds its input. The interpreters are the shells above plus
//     fish, csh and tcsh, python, pythonN[.M], pypy, node, deno, bun, perl,
//     ruby, php, lua, R, Rscript, osascript, pwsh, powershell and awk (awk
//     with a program argument is fine) (interpreter-stdin);
//   - a variable from [RiskyEnvVars] (whole families such as GIT_*, CGO_*,
//     NODE_*, npm_config_*, CARGO_*, PYTHON*, LD_*, XDG_*, less's LESS*,
//     and single names such as GOFLAGS, GOTOOLCHAIN, CC, MAKEFLAGS, SHELL,
//     BASH_ENV, PS4, HOME, TMPDIR; the names of [HarmlessEnvVars] such as
//     CGO_ENABLED, NODE_ENV and GIT_AUTHOR_NAME are exempt, GOOS and GOARCH
//     are not in the list) is assigned anywhere: as a prefix
//     (LD_PRELOAD=x cmd), alone, through export, declare, local, readonly
//     or typeset however quoted (export "PATH=…"), env, sudo, read, mapfile,
//     printf -v, getopts, for, select, ${X:=…}, arithmetic, coproc, {X}>file
//     declare -n X or make X=… (risky-env). IFS is allowed as a prefix of
//     read alone;
//   - a value the gate cannot see is evaluated as code. Bash evaluates
//     variables in arithmetic ($((x)), ((x)), let, array subscripts, [[ -eq
//     ]], declare -i) and names given to read, printf -v, declare, wait -p,
//     test -v and -R, a {name} redirection and ${!x}, and runs command
//     substitutions in any array subscript there, so x='a[$(rm -rf ~)]';
//     echo $((x)) runs rm. A word such as {a[$x]} or {a['$(…)']} just
//     before a redirection is a named-descriptor redirection to bash but a
//     word to the parser, and is refused; so are words given to test or [
//     that may expand to -v and a name (a computed word before a computed
//     one, or a word that may split). A variable that is
//     evaluated must hold plain text: not command output, input (read, for
//     over words, select, getopts), the positional parameters or $_.
//     Arithmetic over command output and ${x@P} are refused outright
//     (value-as-code);
//   - a wrapper's options cannot be parsed with certainty, find is given a
//     computed word that could become an action, or su -s names the shell
//     (wrapper-options);
//   - a word holds an extended glob such as *(…) or @(…), which zsh reads
//     as a glob qualifier that can run code (extglob);
//   - a shell's options or dialect load files or change how its string is
//     read (shell-option), or a granted program's option runs code or loads
//     settings the gate cannot see (program-option), as described above;
//   - a modeled program is given an option or subcommand its model does not
//     list (unknown-option);
//   - the line never ends (resource-bomb), as described above.
//
// Other plain assignments (FOO=bar go test), exec with only redirections,
// and arithmetic over numbers and variables that hold plain text are fine.
//
// # Limits
//
// The analysis models bash for the line itself. A host that runs the line
// with another shell may read rare constructs differently; zsh glob
// qualifiers are refused. echo in dash interprets backslash escapes and
// bash's does not: that changes output only, never what runs.
// What the shell inherits is trusted: aliases and functions already
// defined, exported variables such as CDPATH, and the files commands read
// (scripts, Makefiles, configuration). Relative program paths are reported
// as written, not joined onto a directory the line changed to. Programs
// that run code from their own arguments or files (ssh host cmd, make,
// go test, docker exec, script -c, python -c) are listed as themselves: a
// rule that allows them allows what they run, which containment bounds.
package command
