package command

import (
	"strings"
)

// The models of the programs the gate judges by their arguments: joule's
// templates grant some (go, gofmt, make, npm, npx, cargo, pytest, git,
// mkdir, touch, cat, sort, diff, sed, ls, wc, head, tail, grep, rg), and
// the rest read, write or run files through options a grant that allows
// them would otherwise let through unseen. Sources: each program's --help
// and manual page (GNU coreutils 9.1, grep 3.8, sed 4.9, tar 1.34, findutils
// 4.9, diffutils 3.8, make 4.3, patch 2.7, jq 1.6, curl 7.88, wget 1.21,
// OpenSSH 9.2, rsync 3.2, ripgrep 14, git 2.39, go 1.2x, npm 9–10,
// cargo 1.7x, pytest 8).

// on builds an effect map: on(readsFile, "-f", "--file") maps both names.
func on(e effect, names ...string) map[string]effect {
	m := make(map[string]effect, len(names))
	for _, n := range names {
		m[n] = e
	}
	return m
}

// merge joins effect maps.
func merge(maps ...map[string]effect) map[string]effect {
	out := map[string]effect{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// reader is the model of a program that reads its operands, or standard
// input without one.
func reader(sp *optSpec, values map[string]effect) *model {
	return &model{opts: sp.permuting(), values: values, operands: readsFile}
}

func buildModels() {
	models = map[string]*model{}
	add := func(m *model, names ...string) {
		for _, n := range names {
			models[n] = m
		}
	}
	std := []string{"help", "version"}
	long := func(names ...string) []string { return append(names, std...) }

	// Programs that print, count, hash or transform the files they name.
	add(reader(spec("AbeEnstTuv", long("show-all", "number-nonblank", "show-ends", "number", "squeeze-blank",
		"show-tabs", "show-nonprinting")...), nil), "cat")
	add(reader(spec("brs:", long("before", "regex", "separator=")...), nil), "tac")
	add(reader(spec("b:d:f:h:i:l:n:ps:v:w:", long("body-numbering=", "section-delimiter=", "footer-numbering=",
		"header-numbering=", "line-increment=", "join-blank-lines=", "number-format=", "no-renumber",
		"number-separator=", "starting-line-number=", "number-width=")...), nil), "nl")
	headM := reader(spec("c:n:qvz", long("bytes=", "lines=", "quiet", "silent", "verbose", "zero-terminated")...), nil)
	headM.numbers = true
	add(headM, "head")
	tailM := reader(spec("c:fFn:qs:vz", long("bytes=", "follow?", "lines=", "max-unchanged-stats=", "pid=", "quiet",
		"silent", "retry", "sleep-interval=", "verbose", "zero-terminated")...), nil)
	tailM.numbers = true
	add(tailM, "tail")
	add(reader(spec("cmlLw", long("bytes", "chars", "lines", "files0-from=", "max-line-length", "words", "total=")...),
		on(readsList, "--files0-from")), "wc")
	add(reader(spec("A:j:N:S:t:vwabcdfilosx", long("address-radix=", "endian=", "skip-bytes=", "read-bytes=",
		"strings?", "format=", "output-duplicates", "width?", "traditional")...), nil), "od")
	add(reader(spec("diw:", long("decode", "ignore-garbage", "wrap=")...), nil), "base64", "base32")
	add(reader(spec("diw:", long("decode", "ignore-garbage", "wrap=", "base64", "base64url", "base32", "base32hex",
		"base16", "base2msbf", "base2lsbf", "z85")...), nil), "basenc")
	// sha256sum -c FILE reads the files FILE lists.
	sums := &model{opts: spec("bctzw", long("binary", "check", "tag", "text", "zero", "ignore-missing", "quiet",
		"status", "strict", "warn")...).permuting(), operands: readsFile, custom: checkLists}
	add(sums, "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum")
	add(&model{opts: spec("a:cl:zw", long("algorithm=", "base64", "check", "length=", "raw", "tag", "untagged",
		"zero", "ignore-missing", "quiet", "status", "strict", "warn", "debug")...).permuting(),
		operands: readsFile, custom: checkLists}, "cksum")
	add(reader(spec("b:c:d:f:nszM", long("bytes=", "characters=", "delimiter=", "fields=", "complement",
		"only-delimited", "output-delimiter=", "zero-terminated")...), nil), "cut")
	add(reader(spec("d:sz", long("delimiters=", "serial", "zero-terminated")...), nil), "paste")
	add(reader(spec("a:e:ij:o:t:v:1:2:z", long("ignore-case", "check-order", "nocheck-order", "header",
		"zero-terminated")...), nil), "join")
	add(reader(spec("123z", long("check-order", "nocheck-order", "output-delimiter=", "total",
		"zero-terminated")...), nil), "comm")
	add(reader(spec("bsw:", long("bytes", "spaces", "width=")...), nil), "fold")
	add(reader(spec("cp:stuw:g:", long("crown-margin", "prefix=", "split-only", "tagged-paragraph",
		"uniform-spacing", "width=", "goal=")...), nil), "fmt")
	add(reader(spec("C:acdD:eFfh:iJl:mnN:o:rsStTvw:W:", long("columns=", "across", "show-control-chars",
		"double-space", "date-format=", "expand-tabs?", "form-feed", "header=", "output-tabs?", "join-lines",
		"length=", "merge", "number-lines?", "first-line-number=", "indent=", "no-file-warnings", "separator?",
		"sep-string?", "omit-header", "omit-pagination", "show-nonprinting", "width=", "page-width=")...), nil), "pr")
	add(reader(spec("it:", long("initial", "tabs=")...), nil), "expand")
	add(reader(spec("at:", long("all", "first-only", "tabs=")...), nil), "unexpand")
	add(reader(spec("hV", long()...), nil), "rev")
	add(reader(spec("bi:ln:sv", long("print-bytes", "ignore-initial=", "verbose", "bytes=", "quiet", "silent")...), nil), "cmp")
	add(reader(spec("adfn:o:t:e:s:TUw", long("all", "data", "print-file-name", "bytes=", "radix=",
		"encoding=", "output-separator=", "target=", "unicode=", "include-all-whitespace")...), nil), "strings")
	// uniq [INPUT [OUTPUT]] writes its second operand.
	uniqM := &model{opts: spec("cdDf:is:uzw:", long("count", "repeated", "all-repeated?", "skip-fields=", "group?",
		"ignore-case", "skip-chars=", "unique", "zero-terminated", "check-chars=")...).permuting(),
		numbers: true, custom: inputOutput}
	add(uniqM, "uniq")
	add(&model{opts: spec("ei:n:o:rz", long("echo", "input-range=", "head-count=", "output=", "random-source=",
		"repeat", "zero-terminated")...).permuting(), values: merge(on(writesFile, "-o", "--output"),
		on(readsFile, "--random-source")), custom: shufOperands}, "shuf")
	// tr's operands are character sets.
	add(&model{opts: spec("cCdst", long("complement", "delete", "squeeze-repeats", "truncate-set1")...).permuting(),
		bare: bareNoFile}, "tr")
	// sort -o writes, -T writes temporary files, --files0-from reads a
	// list, --compress-program runs a program.
	add(reader(spec("bdfgiMhnRrVc::C::k:mo:sS:t:T:uz", long("ignore-leading-blanks", "dictionary-order",
		"ignore-case", "general-numeric-sort", "ignore-nonprinting", "month-sort", "human-numeric-sort",
		"numeric-sort", "random-sort", "random-source=", "reverse", "sort=", "version-sort", "batch-size=",
		"check?", "compress-program=", "debug", "files0-from=", "key=", "merge", "output=", "stable",
		"buffer-size=", "field-separator=", "temporary-directory=", "parallel=", "unique", "zero-terminated")...),
		merge(on(writesFile, "-o", "--output"), on(writesDir, "-T", "--temporary-directory"),
			on(readsList, "--files0-from"), on(readsFile, "--random-source"), on(runsProgram, "--compress-program"))),
		"sort")
	// diff: --from-file, --to-file and -X read; -r reads directories.
	diffSpec := spec("qscC:uU:enyW:pF:tTlrNx:X:S:iEZbwBI:aD:dv", long("normal", "brief", "report-identical-files",
		"context?", "unified?", "ed", "rcs", "side-by-side", "width=", "left-column", "suppress-common-lines",
		"show-c-function", "show-function-line=", "label=", "expand-tabs", "initial-tab", "tabsize=",
		"suppress-blank-empty", "paginate", "recursive", "no-dereference", "new-file", "unidirectional-new-file",
		"ignore-file-name-case", "no-ignore-file-name-case", "exclude=", "exclude-from=", "starting-file=",
		"from-file=", "to-file=", "ignore-case", "ignore-tab-expansion", "ignore-trailing-space",
		"ignore-space-change", "ignore-all-space", "ignore-blank-lines", "ignore-matching-lines=", "text",
		"strip-trailing-cr", "ifdef=", "old-group-format=", "new-group-format=", "unchanged-group-format=",
		"changed-group-format=", "line-format=", "old-line-format=", "new-line-format=", "unchanged-line-format=",
		"minimal", "horizon-lines=", "speed-large-files", "color?", "palette=", "no-color")...)
	diffM := reader(diffSpec, on(readsFile, "-X", "--exclude-from", "--from-file", "--to-file"))
	diffM.numbers = true
	add(diffM, "diff")
	add(&model{opts: spec("aAeEiLmo:TxX3", long("text", "show-all", "ed", "show-overlap", "initial-tab", "label=",
		"merge", "strip-trailing-cr", "overlap-only", "easy-only", "diff-program=")...).permuting(),
		values: on(runsProgram, "--diff-program"), operands: readsFile}, "diff3")
	add(&model{opts: spec("abBdEHiI:lo:sStW:w:", long("output=", "ignore-case", "ignore-tab-expansion",
		"ignore-trailing-space", "ignore-space-change", "ignore-all-space", "ignore-blank-lines",
		"ignore-matching-lines=", "strip-trailing-cr", "text", "width=", "left-column", "suppress-common-lines",
		"expand-tabs", "tabsize=", "minimal", "speed-large-files", "diff-program=")...).permuting(),
		values: merge(on(writesFile, "-o", "--output"), on(runsProgram, "--diff-program")), operands: readsFile}, "sdiff")
	// grep: the first operand is the pattern unless -e or -f gives it;
	// -r with no file searches the working directory.
	grepM := reader(spec("EFGPe:f:iywxzsvVm:bnHhoqaId:D:rRLlcTZUB:A:C:", long("extended-regexp", "fixed-strings",
		"basic-regexp", "perl-regexp", "regexp=", "file=", "ignore-case", "no-ignore-case", "word-regexp",
		"line-regexp", "null-data", "no-messages", "invert-match", "max-count=", "byte-offset", "line-number",
		"no-line-number", "line-buffered", "with-filename", "no-filename", "label=", "only-matching", "quiet",
		"silent", "binary-files=", "text", "directories=", "devices=", "recursive", "dereference-recursive",
		"include=", "exclude=", "exclude-from=", "exclude-dir=", "files-without-match", "files-with-matches",
		"count", "initial-tab", "null", "before-context=", "after-context=", "context=", "group-separator=",
		"no-group-separator", "color?", "colour?", "binary")...),
		on(readsFile, "-f", "--file", "--exclude-from"))
	grepM.numbers = true // grep -5 is -C 5
	grepM.pattern, grepM.given = true, []string{"-e", "--regexp", "-f", "--file"}
	grepM.bare, grepM.bareIf = bareCwdIf, []string{"-r", "-R", "--recursive", "--dereference-recursive"}
	grepM.custom = grepDirectories
	add(grepM, "grep", "egrep", "fgrep")
	add(rgModel(), "rg")
	// Listings: ls, du, tree, stat and the like read the names (and
	// metadata) of their operands, and the working directory by default.
	lsM := &model{opts: spec("aAbBcCdDfFgGhHiI:klLmnNop:qQrRsStT:uUvw:xXZ1", long("all", "almost-all", "author",
		"escape", "block-size=", "ignore-backups", "color?", "colour?", "directory", "dired", "classify?", "file-type",
		"format=", "full-time", "group-directories-first", "no-group", "human-readable", "si",
		"dereference-command-line", "dereference-command-line-symlink-to-dir", "hide=", "hyperlink?",
		"indicator-style=", "inode", "ignore=", "kibibytes", "dereference", "numeric-uid-gid", "literal",
		"hide-control-chars", "show-control-chars", "quote-name", "quoting-style=", "reverse", "recursive", "size",
		"sort=", "time=", "time-style=", "tabsize=", "width=", "context", "zero")...).permuting(),
		operands: readsPlace, bare: bareList}
	add(lsM, "ls", "dir", "vdir")
	add(&model{opts: spec("0aB:bcDd:HhkLlmPSst:X:x", long("null", "all", "apparent-size", "block-size=", "bytes",
		"total", "dereference-args", "max-depth=", "files0-from=", "human-readable", "inodes", "dereference",
		"count-links", "no-dereference", "separate-dirs", "si", "summarize", "threshold=", "time?", "time-style=",
		"exclude-from=", "exclude=", "one-file-system")...).permuting(), operands: readsPlace, bare: bareList,
		values: merge(on(readsList, "--files0-from"), on(readsFile, "-X", "--exclude-from"))}, "du")
	add(&model{opts: spec("adlfxL:RP:I:qNQpugshDFvtcUriASnCXJH:T:o:", "noreport", "charset=", "filelimit=",
		"timefmt=", "dirsfirst", "filesfirst", "gitignore", "gitfile=", "ignore-case", "matchdirs", "metafirst",
		"prune", "info", "infofile=", "si", "du", "inodes", "device", "sort=", "nolinks", "fromfile", "fromtabfile",
		"fflinks", "hintro=", "houtro=", "help", "version").permuting(), operands: readsPlace, bare: bareList,
		values: merge(on(writesFile, "-o"), on(readsFile, "--gitfile", "--infofile", "--hintro", "--houtro")),
		refuse: map[string]string{"--fromfile": "reads the listing from files that name other paths",
			"--fromtabfile": "reads the listing from files that name other paths"}}, "tree")
	add(&model{opts: spec("Lfct", long("dereference", "file-system", "cached=", "format=", "printf=", "terse")...).permuting(),
		operands: readsPlace}, "stat")
	add(&model{opts: spec("femnqsvz", long("canonicalize", "canonicalize-existing", "canonicalize-missing",
		"no-newline", "quiet", "silent", "verbose", "zero")...).permuting(), operands: readsPlace}, "readlink")
	add(&model{opts: spec("emLPqsz", long("canonicalize-existing", "canonicalize-missing", "logical", "physical",
		"quiet", "relative-to=", "relative-base=", "strip", "no-symlinks", "zero")...).permuting(),
		operands: readsPlace, values: on(readsPlace, "--relative-to", "--relative-base")}, "realpath")
	add(&model{opts: spec("bcCdEe:f:F:hiklLm:nNprsSvzZ0P:", long("brief", "checking-printout", "exclude=",
		"exclude-quiet=", "files-from=", "separator=", "mime", "apple", "extension", "mime-type", "mime-encoding",
		"keep-going", "list", "dereference", "no-dereference", "magic-file=", "no-buffer", "no-pad", "print0",
		"preserve-date", "parameter=", "raw", "special-files", "uncompress", "uncompress-noreport", "no-sandbox",
		"compile", "debug")...).permuting(), operands: readsFile,
		values: merge(on(readsList, "-f", "--files-from"), on(readsFile, "-m", "--magic-file")),
		refuse: map[string]string{"-C": "compiles a magic file next to the one it reads", "--compile": "compiles a magic file next to the one it reads"}}, "file")
	add(&model{opts: spec("s:n:e:f:vbcCdox", "help", "version").permuting(), operands: readsFile,
		values: on(readsFile, "-f")}, "hexdump", "hd")
	// xxd [-r] [INFILE [OUTFILE]] writes its second operand.
	add(&model{opts: spec("ac:Eg:hi:l:o:prs:uvCR:bdn:e", "autoskip", "bits", "cols=", "capitalize", "EBCDIC",
		"groupsize=", "help", "include", "len=", "name=", "offset=", "postscript", "plain", "ps", "revert",
		"seek=", "uppercase", "version").permuting(), custom: inputOutput}, "xxd")

	// Programs that write, create, move or remove what they name.
	add(&model{opts: spec("acd:fhmr:t:", long("no-create", "date=", "no-dereference", "reference=", "time=")...).permuting(),
		operands: touches, values: on(readsFile, "-r", "--reference")}, "touch")
	add(&model{opts: spec("m:pvZ", long("mode=", "parents", "verbose", "context?")...).permuting(),
		operands: writesFile}, "mkdir")
	add(&model{opts: spec("pv", long("ignore-fail-on-non-empty", "parents", "verbose")...).permuting(),
		operands: writesFile}, "rmdir")
	add(&model{opts: spec("fiIrRdv", long("force", "interactive?", "one-file-system", "no-preserve-root",
		"preserve-root?", "recursive", "dir", "verbose")...).permuting(), operands: writesFile,
		tree: []string{"-r", "-R", "--recursive"}}, "rm", "unlink")
	add(&model{opts: spec("aip", long("append", "ignore-interrupts", "output-error?")...).permuting(),
		operands: writesFile}, "tee")
	add(&model{opts: spec("fn:s:uvxz", long("force", "iterations=", "random-source=", "size=", "remove?",
		"verbose", "exact", "zero")...).permuting(), operands: writesFile,
		values: on(readsFile, "--random-source")}, "shred")
	add(&model{opts: spec("ocs:", long("io-blocks", "size=", "no-create", "reference=")...).permuting(),
		operands: writesFile, values: on(readsFile, "-r", "--reference")}, "truncate")
	// chmod, chown, chgrp change what they name; the first operand is the
	// mode or owner unless --reference gives it.
	for _, n := range []string{"chmod", "chown", "chgrp"} {
		add(&model{opts: spec("cfvRhHLP", long("changes", "silent", "quiet", "verbose", "dereference",
			"no-dereference", "from=", "no-preserve-root", "preserve-root", "reference=", "recursive")...).permuting(),
			values: on(readsFile, "--reference"), operands: writesFile, pattern: true,
			given: []string{"--reference"}, numbers: n == "chmod", tree: []string{"-R", "--recursive"}}, n)
	}
	// cp, mv, ln and install write their destination, and each source
	// under its own name into a destination directory.
	add(&model{opts: spec("abdfiHlLnPpRrsS:t:TuvxZ", long("archive", "attributes-only", "backup?", "copy-contents",
		"debug", "force", "interactive", "link", "dereference", "no-clobber", "no-dereference", "preserve?",
		"no-preserve=", "parents", "recursive", "reflink?", "remove-destination", "sparse=",
		"strip-trailing-slashes", "symbolic-link", "suffix=", "target-directory=", "no-target-directory",
		"update?", "verbose", "one-file-system", "context?")...).permuting(),
		operands: readsFile, dest: true, values: on(writesFile, "-t", "--target-directory"),
		tree: []string{"-r", "-R", "--recursive", "-a", "--archive"}, custom: cpParents}, "cp")
	add(&model{opts: spec("bfinS:t:TuvZ", long("backup?", "debug", "exchange", "force", "interactive", "no-clobber",
		"no-copy", "strip-trailing-slashes", "suffix=", "target-directory=", "no-target-directory", "update?",
		"verbose", "context")...).permuting(), operands: writesFile, dest: true,
		values: on(writesFile, "-t", "--target-directory"), tree: []string{"*"}}, "mv")
	// ln's targets are read (a hard link gives their content a new name;
	// a symbolic link is followed later).
	add(&model{opts: spec("bdFfiLnPrsS:t:Tv", long("backup?", "directory", "force", "interactive", "logical",
		"no-dereference", "physical", "relative", "symbolic", "suffix=", "target-directory=",
		"no-target-directory", "verbose")...).permuting(), dest: true,
		values: on(writesFile, "-t", "--target-directory"), custom: lnTargets}, "ln")
	add(&model{opts: spec("bcCdDg:m:o:psS:t:TvZ", long("backup?", "compare", "directory", "group=", "mode=",
		"owner=", "preserve-timestamps", "strip", "strip-program=", "suffix=", "target-directory=",
		"no-target-directory", "verbose", "preserve-context", "context?", "debug")...).permuting(),
		operands: readsFile, dest: true, values: merge(on(writesFile, "-t", "--target-directory"),
			on(runsProgram, "--strip-program")), custom: installDirs}, "install")
	// split and csplit write files named from a prefix.
	add(&model{opts: spec("a:b:C:del:n:t:ux", long("suffix-length=", "additional-suffix=", "bytes=", "line-bytes=",
		"numeric-suffixes?", "hex-suffixes?", "elide-empty-files", "filter=", "lines=", "number=", "separator=",
		"unbuffered", "verbose")...).permuting(), values: on(runsShell, "--filter"), custom: splitFiles}, "split")
	add(&model{opts: spec("b:f:kn:sz", long("suffix-format=", "prefix=", "keep-files", "suppress-matched",
		"digits=", "quiet", "silent", "elide-empty-files")...).permuting(), custom: csplitFiles}, "csplit")
	add(&model{opts: spec("", long()...), custom: ddOperands, bare: bareNoFile}, "dd")
	add(patchModel(), "patch")
	// Compressors read each file and write FILE.gz beside it, unless
	// they write to standard output.
	gz := &model{opts: spec("cdfhklLnNqrS:tvV123456789", long("stdout", "to-stdout", "decompress", "uncompress",
		"force", "keep", "list", "license", "no-name", "name", "quiet", "recursive", "rsyncable", "suffix=",
		"synchronous", "test", "verbose", "fast", "best")...).permuting(), operands: readsFile, custom: compressInPlace}
	add(gz, "gzip", "gunzip", "zcat")
	add(&model{opts: spec("cdfkqstvzL123456789", long("stdout", "decompress", "force", "keep", "quiet", "small",
		"test", "verbose", "compress", "license", "fast", "best")...).permuting(), operands: readsFile,
		custom: compressInPlace}, "bzip2", "bunzip2", "bzcat")
	add(&model{opts: spec("cdfFhHklqQtT:vVzC:M:0123456789e", long("stdout", "to-stdout", "decompress", "uncompress",
		"force", "format=", "keep", "list", "quiet", "test", "threads=", "verbose", "compress", "check=",
		"memlimit=", "extreme", "fast", "best", "single-stream", "no-sparse", "suffix=", "ignore-check",
		"no-warn", "robot", "info-memory", "memlimit-compress=", "memlimit-decompress=", "no-adjust", "flush-timeout=")...).permuting(),
		operands: readsFile, custom: compressInPlace}, "xz", "unxz", "xzcat", "lzma", "unlzma", "lzcat")

	// Programs that search below the directories they name.
	add(findModel(), "find")
	add(sedModel(), "sed")
	add(awkModel(), "awk", "gawk", "mawk", "nawk")
	add(jqModel(), "jq")
	add(tarModel(), "tar", "gtar")
	add(gofmtModel(), "gofmt")
	add(makeModel(), "make", "gmake")

	// Network programs: their downloads and uploads are files too.
	add(curlModel(), "curl")
	add(wgetModel(), "wget")
	add(sshModel(), "ssh")
	add(scpModel(), "scp")
	add(rsyncModel(), "rsync")

	// Toolchains with subcommands.
	add(goModel(), "go")
	add(gitModel(), "git")
	npm := npmModel("npm")
	add(npm, "npm")
	add(npxModel(), "npx")
	add(npmModel("pnpm"), "pnpm")
	add(npmModel("yarn"), "yarn")
	add(cargoModel(), "cargo")
	add(pytestModel(), "pytest", "py.test")
}

// checkLists: sha256sum -c reads the files its operands list.
func checkLists(a *analyzer, name string, p *parsedArgs, fr frame) {
	if !p.has("-c", "--check") {
		return
	}
	for _, w := range p.operands {
		a.unknownRead(name+" -c reads the files listed in "+quote(w.Text), fr)
	}
	if len(p.operands) == 0 {
		a.unknownRead(name+" -c reads the files listed on its standard input", fr)
	}
}

// inputOutput: uniq and xxd read their first operand and write their second.
func inputOutput(a *analyzer, name string, p *parsedArgs, fr frame) {
	ops := p.operands
	for i, w := range ops {
		if w.Literal && w.Text == "-" {
			continue
		}
		if i == 0 {
			a.read(w, fr)
		} else {
			a.write(w, false, fr)
		}
	}
}

// shufOperands: shuf's operands are files unless -e or -i makes them words.
func shufOperands(a *analyzer, name string, p *parsedArgs, fr frame) {
	if p.has("-e", "--echo", "-i", "--input-range") {
		return
	}
	for _, w := range p.operands {
		if !(w.Literal && w.Text == "-") {
			a.read(w, fr)
		}
	}
}

// grepDirectories: -d recurse is -r, and -d read on a directory
// operand reads it as a file.
func grepDirectories(a *analyzer, name string, p *parsedArgs, fr frame) {
	o := p.get("-d", "--directories")
	if o == nil || !(o.arg.Text == "recurse" || !o.arg.Literal) {
		return
	}
	rest := p.operands
	if !p.has("-e", "--regexp", "-f", "--file") && len(rest) > 0 {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		a.read(literalWord("."), fr)
	}
}

// cpParents: cp --parents writes each source's path below the
// destination directory.
func cpParents(a *analyzer, name string, p *parsedArgs, fr frame) {
	if !p.has("--parents") {
		return
	}
	a.unknownWrite("cp --parents writes each source's directories below the destination", fr)
}

// lnTargets: ln reads the targets of hard links; with one operand it
// links it into the working directory.
func lnTargets(a *analyzer, name string, p *parsedArgs, fr frame) {
	ops := p.operands
	if len(ops) == 1 && !p.has("-t", "--target-directory") {
		a.intoDir(name, literalWord("."), ops, false, fr)
	}
	if p.has("-s", "--symbolic") {
		return
	}
	if len(ops) > 1 && !p.has("-t", "--target-directory") {
		ops = ops[:len(ops)-1]
	}
	for _, w := range ops {
		a.read(w, fr)
	}
}

// installDirs: install -d creates every operand; -s runs strip.
func installDirs(a *analyzer, name string, p *parsedArgs, fr frame) {
	if p.has("-d", "--directory") {
		for _, w := range p.operands {
			a.write(w, false, fr)
		}
	}
	if p.has("-s", "--strip") && !p.has("--strip-program") {
		a.exec([]word{literalWord("strip"), inputWord("{}")}, nil, fr.wrapped("install"), byProgram)
	}
}

// splitFiles: split [INPUT [PREFIX]] writes PREFIXaa, PREFIXab … (x by
// default) in the working directory.
func splitFiles(a *analyzer, name string, p *parsedArgs, fr frame) {
	ops := p.operands
	prefix := "x"
	if len(ops) > 0 && !(ops[0].Literal && ops[0].Text == "-") {
		a.read(ops[0], fr)
	}
	if len(ops) > 1 {
		prefix = ops[1].Text
	}
	if p.has("--filter") {
		return // the filter's own redirections write
	}
	a.unknownWrite("split writes files named "+quote(prefix+"…"), fr)
}

// csplitFiles: csplit FILE PATTERN… writes xx00, xx01 … (-f PREFIX).
func csplitFiles(a *analyzer, name string, p *parsedArgs, fr frame) {
	if len(p.operands) > 0 && !(p.operands[0].Literal && p.operands[0].Text == "-") {
		a.read(p.operands[0], fr)
	}
	prefix := "xx"
	if o := p.get("-f", "--prefix"); o != nil {
		prefix = o.arg.Text
	}
	a.unknownWrite("csplit writes files named "+quote(prefix+"…"), fr)
}

// ddOperands: dd's operands are KEY=VALUE; if= reads, of= writes.
func ddOperands(a *analyzer, name string, p *parsedArgs, fr frame) {
	for _, w := range p.operands {
		if !w.Literal {
			if !strings.Contains(w.prefix, "=") || w.ifs {
				a.refuseOption("dd", "is given %s, which is computed when the line runs and may be of=FILE", quote(w.Text))
				return
			}
			k, _, _ := strings.Cut(w.prefix, "=")
			switch k {
			case "if":
				a.read(w.after(3), fr)
			case "of":
				a.write(w.after(3), false, fr)
			}
			continue
		}
		k, v, ok := strings.Cut(w.Text, "=")
		if !ok {
			a.fail(CodeUnknownOption, "dd is given %s, which is not an operand of the form KEY=VALUE it models", quote(w.Text))
			return
		}
		switch k {
		case "if":
			a.read(literalWord(v), fr)
		case "of":
			a.write(literalWord(v), false, fr)
		case "bs", "ibs", "obs", "cbs", "skip", "iseek", "seek", "oseek", "count", "status", "conv", "iflag", "oflag":
		default:
			a.fail(CodeUnknownOption, "dd is given %s, which the gate does not model", quote(w.Text))
			return
		}
	}
}

// compressInPlace: without -c (or -t, -l), a compressor replaces each
// file with its compressed form beside it (FILE.gz), or a compressed file
// with its content (FILE.gz becomes FILE).
func compressInPlace(a *analyzer, name string, p *parsedArgs, fr frame) {
	if p.has("-c", "--stdout", "--to-stdout", "-t", "--test", "-l", "--list") || strings.HasSuffix(name, "cat") {
		return
	}
	suffix := map[string]string{"gzip": ".gz", "gunzip": ".gz", "bzip2": ".bz2", "bunzip2": ".bz2", "xz": ".xz",
		"unxz": ".xz", "lzma": ".lzma", "unlzma": ".lzma"}[name]
	if o := p.get("-S", "--suffix"); o != nil {
		suffix = o.arg.Text
	}
	decompress := strings.HasPrefix(name, "un") || strings.HasPrefix(name, "gun") || strings.HasPrefix(name, "bun") ||
		p.has("-d", "--decompress", "--uncompress")
	for _, w := range p.operands {
		switch {
		case w.Literal && w.Text == "-":
			continue
		case p.has("-r", "--recursive") || !w.Literal || suffix == "":
			a.unknownWrite(name+" writes the (de)compressed form of "+quote(w.Text)+" beside it", fr)
		case decompress && strings.HasSuffix(w.Text, suffix):
			a.write(literalWord(strings.TrimSuffix(w.Text, suffix)), false, fr)
		case decompress:
			a.unknownWrite(name+" writes the content of "+quote(w.Text)+" beside it", fr)
		default:
			a.write(literalWord(w.Text+suffix), false, fr)
		}
		a.write(w, false, fr) // removed once (de)compressed
	}
}
