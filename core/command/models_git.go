package command

import (
	"strings"
	"sync"
)

// The git model: each subcommand's options (git SUBCOMMAND -h, git 2.39,
// and git-log(1), git-diff(1), git-rev-list(1) for the revision and diff
// options), what their values and operands are, and the subcommands and
// options that run programs. A subcommand outside the table (an alias, or
// a git-NAME program found in PATH) is refused.

// gitDiffLong and gitRevLong are the diff and revision options of log,
// show, diff, whatchanged, rev-list and their kin.
const (
	gitDiffShort = "puszU::X::B::M::C::Dl:S:G:O:RabwI:Wtmcr0123"
	gitDiffLong  = "patch no-patch unified= function-context raw patch-with-raw patch-with-stat numstat shortstat " +
		"dirstat? cumulative dirstat-by-file? check summary name-only name-status stat? stat-width= stat-name-width= " +
		"stat-graph-width= stat-count= compact-summary binary full-index color? no-color ws-error-highlight= abbrev? " +
		"no-abbrev src-prefix= dst-prefix= line-prefix= no-prefix default-prefix inter-hunk-context= " +
		"output-indicator-new= output-indicator-old= output-indicator-context= break-rewrites? find-renames? " +
		"irreversible-delete find-copies? find-copies-harder no-renames rename-empty no-rename-empty follow minimal " +
		"ignore-all-space ignore-space-change ignore-space-at-eol ignore-cr-at-eol ignore-blank-lines " +
		"ignore-matching-lines= indent-heuristic no-indent-heuristic patience histogram diff-algorithm= anchored= " +
		"word-diff? word-diff-regex= color-words? color-moved? no-color-moved color-moved-ws= no-color-moved-ws " +
		"relative? no-relative text exit-code quiet ext-diff no-ext-diff textconv no-textconv ignore-submodules? " +
		"submodule? ita-invisible-in-index ita-visible-in-index pickaxe-all pickaxe-regex rotate-to= skip-to= " +
		"find-object= diff-filter= output= cached staged merge-base no-index base ours theirs combined-all-paths " +
		"diff-merges= no-diff-merges remerge-diff cc dd no-function-context no-compact-summary no-full-index"
	gitRevShort = "n:iEFPgL:"
	gitRevLong  = "follow decorate? no-decorate decorate-refs= decorate-refs-exclude= clear-decorations source no-source " +
		"mailmap no-mailmap use-mailmap no-use-mailmap full-diff log-size max-count= skip= since= after= " +
		"since-as-filter= until= before= max-age= min-age= author= committer= grep-reflog= grep= all-match " +
		"invert-grep regexp-ignore-case basic-regexp extended-regexp fixed-strings perl-regexp remove-empty merges " +
		"no-merges min-parents= max-parents= no-min-parents no-max-parents first-parent exclude-first-parent-only not " +
		"all branches? tags? remotes? glob= exclude= exclude-hidden= reflog alternate-refs single-worktree " +
		"ignore-missing bisect stdin cherry-mark cherry-pick left-only right-only cherry walk-reflogs merge boundary " +
		"simplify-by-decoration show-pulls full-history dense sparse simplify-merges ancestry-path? date-order " +
		"author-date-order topo-order reverse no-walk? do-walk pretty? format= abbrev-commit no-abbrev-commit oneline " +
		"encoding= expand-tabs? no-expand-tabs notes? no-notes show-notes? standard-notes no-standard-notes " +
		"show-signature relative-date date= parents children left-right graph show-linear-break? objects " +
		"objects-edge objects-edge-aggressive in-commit-order indexed-objects unpacked object-names no-object-names " +
		"filter= no-filter filter-provided-objects filter-print-omitted missing= exclude-promisor-objects header " +
		"no-commit-header commit-header timestamp count disk-usage? use-bitmap-index progress= bisect-vars bisect-all " +
		"no-color-moved-ws"
)

// gitOptionTables are the parse-options subcommands' options, from
// git SUBCOMMAND -h (git 2.39).
var gitOptionTables = map[string][2]string{
	"status":        {"vsbzu::M::", "verbose short branch show-stash ahead-behind porcelain? long null untracked-files? ignored? ignore-submodules? column? no-renames find-renames? renames"},
	"commit":        {"qvF:m:c:C:st:eS::aiponzu::", "quiet verbose file= author= date= message= reedit-message= reuse-message= fixup= squash= reset-author trailer= signoff template= edit cleanup= status gpg-sign? all include interactive patch only no-verify verify dry-run short branch ahead-behind porcelain long null amend no-post-rewrite post-rewrite untracked-files? pathspec-from-file= pathspec-file-nul allow-empty allow-empty-message"},
	"add":           {"nvipefuNA", "dry-run verbose interactive patch edit force update renormalize intent-to-add all ignore-removal refresh ignore-errors ignore-missing sparse chmod= pathspec-from-file= pathspec-file-nul"},
	"checkout":      {"b:B:lqmdt::f23p", "guess overlay quiet recurse-submodules? progress merge conflict= detach track? force orphan= overwrite-ignore ignore-other-worktrees ours theirs patch ignore-skip-worktree-bits pathspec-from-file= pathspec-file-nul"},
	"switch":        {"c:C:qmdt::f", "create= force-create= guess discard-changes quiet recurse-submodules? progress merge conflict= detach track? force orphan= overwrite-ignore ignore-other-worktrees"},
	"restore":       {"s:SWqm23p", "source= staged worktree ignore-unmerged overlay quiet recurse-submodules? progress merge conflict= ours theirs patch ignore-skip-worktree-bits pathspec-from-file= pathspec-file-nul"},
	"reset":         {"qpN", "quiet no-refresh refresh mixed soft hard merge keep recurse-submodules? patch intent-to-add pathspec-from-file= pathspec-file-nul"},
	"branch":        {"vqt::u:radDmMcClfi", "verbose quiet track? set-upstream-to= unset-upstream color? remotes contains= no-contains= abbrev? all delete move copy list show-current create-reflog edit-description force merged= no-merged= column? sort= points-at= ignore-case recurse-submodules format="},
	"tag":           {"ln::dvam:F:esu:fi", "list delete verify annotate message= file= edit sign cleanup= local-user= force create-reflog column? contains= no-contains= merged= no-merged= sort= points-at= format= color? ignore-case trailer="},
	"merge":         {"nes:X:m:F:vqS::", "stat summary log? squash commit edit cleanup= ff ff-only rerere-autoupdate verify-signatures strategy= strategy-option= message= file= into-name= verbose quiet abort quit continue allow-unrelated-histories progress gpg-sign? autostash overwrite-ignore signoff no-verify verify"},
	"rebase":        {"qvnC:fmiS::x:r::s:X:", "onto= keep-base no-verify verify quiet verbose no-stat stat signoff committer-date-is-author-date reset-author-date ignore-whitespace whitespace= force-rebase no-ff ff continue skip abort quit edit-todo show-current-patch apply merge interactive rerere-autoupdate empty= autosquash update-refs gpg-sign? autostash exec= rebase-merges? fork-point strategy= strategy-option= root reschedule-failed-exec reapply-cherry-picks"},
	"cherry-pick":   {"nesm:X:S::x", "quit continue abort skip cleanup= no-commit edit signoff mainline= rerere-autoupdate strategy= strategy-option= gpg-sign? ff allow-empty allow-empty-message keep-redundant-commits"},
	"revert":        {"nesm:X:S::", "quit continue abort skip cleanup= no-commit edit signoff mainline= rerere-autoupdate strategy= strategy-option= gpg-sign? reference"},
	"fetch":         {"vqafmtnj:pPkuo:46", "verbose quiet all set-upstream append atomic upload-pack= force multiple tags jobs= prefetch prune prune-tags recurse-submodules? dry-run write-fetch-head keep update-head-ok progress depth= shallow-since= shallow-exclude= deepen= unshallow refetch update-shallow refmap= server-option= ipv4 ipv6 negotiation-tip= negotiate-only filter= auto-maintenance auto-gc show-forced-updates write-commit-graph stdin"},
	"pull":          {"vqr::ns:X:S::aftpj::ko:46", "verbose quiet progress recurse-submodules? rebase? stat log? signoff? squash commit edit cleanup= ff ff-only verify verify-signatures autostash strategy= strategy-option= gpg-sign? allow-unrelated-histories all append upload-pack= force tags prune jobs? dry-run keep depth= shallow-since= shallow-exclude= deepen= unshallow update-shallow refmap= server-option= ipv4 ipv6 negotiation-tip= show-forced-updates set-upstream"},
	"push":          {"vqdnfuo:46", "verbose quiet repo= all branches mirror delete tags dry-run porcelain force force-with-lease? force-if-includes recurse-submodules= thin receive-pack= exec= set-upstream progress prune no-verify verify follow-tags signed? atomic push-option= ipv4 ipv6"},
	"clone":         {"vqnlsj:o:b:u:c:46", "verbose quiet progress reject-shallow no-checkout bare mirror local no-hardlinks shared recurse-submodules? recursive? jobs= template= reference= reference-if-able= dissociate origin= branch= upload-pack= depth= shallow-since= shallow-exclude= single-branch no-tags shallow-submodules separate-git-dir= config= server-option= ipv4 ipv6 filter= also-filter-submodules remote-submodules sparse bundle-uri="},
	"init":          {"qb:", "template= bare shared? quiet separate-git-dir= initial-branch= object-format="},
	"rm":            {"nqfr", "dry-run quiet cached force ignore-unmatch sparse pathspec-from-file= pathspec-file-nul"},
	"mv":            {"vnfk", "verbose dry-run force sparse"},
	"clean":         {"qnfide:xX", "quiet dry-run force interactive exclude="},
	"grep":          {"viwaIrEGFPnhHlLzocC:B:A:NpWf:e:qO::m:", "cached no-index index untracked exclude-standard recurse-submodules invert-match ignore-case word-regexp text textconv recursive max-depth= extended-regexp basic-regexp fixed-strings perl-regexp line-number column full-name files-with-matches name-only files-without-match null only-matching count color? break heading context= before-context= after-context= threads= show-function function-context and or not quiet all-match open-files-in-pager? ext-grep max-count="},
	"blame":         {"bfnpctlsewS:C::M::L:", "incremental root show-stats progress score-debug show-name show-number porcelain line-porcelain show-email ignore-rev= ignore-revs-file= color-lines color-by-age minimal contents= abbrev? date= reverse first-parent"},
	"shortlog":      {"cnsew::", "committer numbered summary email group="},
	"describe":      {"", "contains debug all tags long first-parent abbrev? exact-match candidates= match= exclude= always dirty? broken?"},
	"ls-files":      {"ztvfcdmoiskux:X:", "cached deleted modified others ignored stage killed directory eol empty-directory unmerged resolve-undo exclude= exclude-from= exclude-per-directory= exclude-standard full-name recurse-submodules error-unmatch with-tree= abbrev? debug deduplicate sparse format="},
	"ls-tree":       {"drtzl", "long name-only name-status object-only full-name full-tree format= abbrev?"},
	"cat-file":      {"eptsz", "allow-unknown-type use-mailmap mailmap batch? batch-check? batch-command? batch-all-objects buffer follow-symlinks unordered textconv filters path="},
	"show-ref":      {"ds::q", "tags heads verify head dereference hash? abbrev? quiet exclude-existing?"},
	"for-each-ref":  {"sp", "shell perl python tcl count= format= color? sort= points-at= merged= no-merged= contains= no-contains= ignore-case"},
	"symbolic-ref":  {"qdm:", "quiet delete short recurse"},
	"merge-base":    {"a", "all octopus independent is-ancestor fork-point"},
	"name-rev":      {"", "name-only tags refs= exclude= all stdin annotate-stdin undefined always"},
	"hash-object":   {"t:w", "stdin stdin-paths no-filters literally path="},
	"count-objects": {"vH", "verbose human-readable"},
	"fsck":          {"v", "verbose unreachable dangling tags root cache reflogs full connectivity-only strict lost-found progress name-objects"},
	"gc":            {"q", "quiet prune? cruft aggressive auto force keep-largest-pack"},
	"apply":         {"p:N3zC:Rvq", "exclude= include= no-add stat numstat summary check index intent-to-add cached unsafe-paths apply 3way build-fake-ancestor= whitespace= ignore-space-change ignore-whitespace reverse unidiff-zero reject allow-overlap verbose quiet inaccurate-eof recount directory= allow-empty"},
	"am":            {"i3qsukmcC:p:rS::", "interactive 3way quiet signoff utf8 keep keep-non-patch message-id keep-cr no-keep-cr scissors quoted-cr= whitespace= ignore-space-change ignore-whitespace directory= exclude= include= patch-format= reject resolvemsg continue resolved skip abort quit show-current-patch? allow-empty committer-date-is-author-date ignore-date rerere-autoupdate gpg-sign? empty="},
	"archive":       {"o:vNl0123456789", "format= prefix= add-file= add-virtual-file= output= worktree-attributes verbose list remote= exec="},
	"check-ignore":  {"qvzn", "quiet verbose stdin non-matching no-index"},
	"check-attr":    {"az", "all cached stdin source="},
	"show-branch":   {"arg::", "all remotes color? more? list no-name current sha1-name merge-base independent topo-order topics sparse date-order reflog?"},
	"cherry":        {"v", "abbrev? verbose"},
	"var":           {"l", ""},
	"version":       {"", "build-options"},
	"help":          {"amwivgc", "all external-commands aliases man web info verbose guides user-interfaces developer-interfaces config"},
	"update-index":  {"qzg", "ignore-submodules add replace remove unmerged refresh really-refresh cacheinfo= chmod= assume-unchanged no-assume-unchanged skip-worktree no-skip-worktree ignore-skip-worktree-entries info-only force-remove stdin index-info unresolve again ignore-missing verbose clear-resolve-undo index-version= split-index untracked-cache test-untracked-cache force-untracked-cache force-write-index fsmonitor fsmonitor-valid no-fsmonitor-valid"},
	"config":        {"f:let:z", "global system local worktree file= blob= get get-all get-regexp get-urlmatch replace-all add unset unset-all rename-section remove-section list fixed-value edit get-color get-colorbool type= bool int bool-or-int bool-or-str path expiry-date null name-only includes show-origin show-scope default="},
	"ls-remote":     {"qtho:", "quiet upload-pack= tags heads refs get-url sort= exit-code symref server-option="},
	"remote":        {"v", "verbose"},
	"notes":         {"", "ref="},
	"rev-parse":     {"qS", "parseopt sq-quote keep-dashdash stop-at-non-option stuck-long revs-only no-revs flags no-flags default= prefix= verify quiet sq short? not abbrev-ref? symbolic symbolic-full-name all branches? tags? remotes? glob= exclude= exclude-hidden= disambiguate= local-env-vars path-format= git-dir git-common-dir resolve-git-dir= git-path= show-toplevel show-superproject-working-tree shared-index-path absolute-git-dir is-inside-git-dir is-inside-work-tree is-bare-repository is-shallow-repository show-cdup show-prefix show-object-format? since= after= until= before= show-ref-format"},
	// diff and log take the revision and diff options besides their own.
	"diff":            {gitDiffShort, gitDiffLong},
	"diff-tree":       {gitDiffShort + "v", gitDiffLong + " stdin no-commit-id always root merge-base"},
	"diff-index":      {gitDiffShort, gitDiffLong},
	"diff-files":      {gitDiffShort + "q", gitDiffLong},
	"log":             {gitDiffShort + gitRevShort, gitDiffLong + " " + gitRevLong},
	"show":            {gitDiffShort + gitRevShort, gitDiffLong + " " + gitRevLong},
	"whatchanged":     {gitDiffShort + gitRevShort, gitDiffLong + " " + gitRevLong},
	"rev-list":        {gitDiffShort + gitRevShort, gitDiffLong + " " + gitRevLong},
	"range-diff":      {gitDiffShort, gitDiffLong + " creation-factor= no-dual-color notes? left-only right-only"},
	"format-patch":    {gitDiffShort + gitRevShort + "Nv:o:kq", gitDiffLong + " " + gitRevLong + " numbered no-numbered signoff stdout cover-letter numbered-files suffix= start-number= reroll-count= filename-max-length= rfc cover-from-description= subject-prefix= output-directory= keep-subject no-binary zero-commit ignore-if-in-upstream no-stat add-header= to= cc= from? in-reply-to= attach? inline? thread? signature= base= signature-file= progress interdiff= range-diff= creation-factor= force-in-body-from"},
	"stash":           {"pkuaqm:S", "patch keep-index no-keep-index include-untracked all quiet message= staged index pathspec-from-file= pathspec-file-nul " + gitDiffLong},
	"worktree":        {"fdbB:q", "force detach checkout no-checkout lock reason= orphan quiet track guess-remote porcelain verbose expire= dry-run z"},
	"submodule":       {"qbfn", "quiet cached recursive init remote no-fetch checkout merge rebase depth= recommend-shallow single-branch jobs= filter= reference= dissociate force name= branch= default files summary-limit="},
	"bisect":          {"", "term-old= term-new= term-good= term-bad= no-checkout first-parent"},
	"bundle":          {"q", "quiet progress all-progress all-progress-implied version= stdin"},
	"reflog":          {"n", "all expire= expire-unreachable= rewrite updateref stale-fix dry-run verbose single-worktree " + gitRevLong},
	"sparse-checkout": {"", "cone no-cone sparse-index no-sparse-index skip-checks rules-file= stdin"},
	"maintenance":     {"", "task= auto quiet schedule="},
}

// gitValues say what options' values are to git, by subcommand ("*" for
// every subcommand).
var gitValues = map[string]map[string]effect{
	"*": {"--pathspec-from-file": readsList, "--output": writesFile, "-O": readsFile, "--file": readsFile,
		"--template": readsFile, "--exclude-from": readsFile, "--ignore-revs-file": readsFile, "--contents": readsFile,
		"--signature-file": readsFile, "--add-file": readsFile, "--output-directory": writesDir,
		"--build-fake-ancestor": writesFile, "--separate-git-dir": writesFile, "--reference": readsFile,
		"--reference-if-able": readsFile, "--rules-file": readsFile},
	"commit":       {"-F": readsFile, "-t": readsFile},
	"tag":          {"-F": readsFile},
	"merge":        {"-F": readsFile},
	"ls-files":     {"-X": readsFile},
	"format-patch": {"-o": writesDir},
	"archive":      {"-o": writesFile},
	"blame":        {"-S": readsFile},
	"config":       {"-f": readsFile, "--file": readsFile},
	"clone":        {"--template": noFile},
	"init":         {"--template": noFile},
	"rebase":       {"-x": runsShell, "--exec": runsShell},
}

// gitRefused are options that run a program, fetch one or copy files
// that run later; by subcommand ("*" for every one).
var gitRefused = map[string]map[string]string{
	"*": {"--upload-pack": "runs the program it names, on this host for a local repository",
		"--receive-pack": "runs the program it names, on this host for a local repository",
		"--exec":         "runs the program it names, on this host for a local repository"},
	"clone": {"-u": "runs the program it names, on this host for a local repository",
		"--template": "copies hooks from a directory the gate does not read into the new repository"},
	"init": {"--template": "copies hooks from a directory the gate does not read into the new repository"},
	"grep": {"-O": "opens the matching files in a pager it runs", "--open-files-in-pager": "opens the matching files in a pager it runs"},
	"help": {"-w": "opens a web browser", "--web": "opens a web browser"},
	"config": {"-e": "opens an editor on the configuration", "--edit": "opens an editor on the configuration",
		"--rename-section": "can move keys into a section whose keys run programs", "--system": "changes the configuration of every user"},
	"archive": {"--exec": "runs the program it names on the remote side, which may be this host"},
}

// gitStrategies are the merge strategies of the distribution: any other
// runs git-merge-NAME from PATH.
var gitStrategies = map[string]bool{"ort": true, "recursive": true, "resolve": true, "octopus": true, "ours": true, "subtree": true}

// gitModes are subcommands with verbs of their own, and the verbs the
// model knows; "" is the subcommand without a verb.
var gitModes = map[string][]string{
	"stash":           {"", "push", "save", "list", "show", "pop", "apply", "drop", "clear", "branch", "create", "store"},
	"worktree":        {"add", "list", "lock", "move", "prune", "remove", "repair", "unlock"},
	"submodule":       {"", "status", "init", "deinit", "update", "set-branch", "set-url", "summary", "sync", "absorbgitdirs", "add"},
	"bisect":          {"start", "bad", "good", "new", "old", "terms", "skip", "reset", "log", "run", "replay", "help"},
	"bundle":          {"create", "verify", "list-heads", "unbundle"},
	"reflog":          {"", "show", "expire", "delete", "exists"},
	"remote":          {"", "add", "rename", "remove", "rm", "set-head", "set-branches", "get-url", "set-url", "show", "prune", "update"},
	"notes":           {"", "list", "add", "copy", "append", "show", "merge", "remove", "prune", "get-ref"},
	"sparse-checkout": {"list", "set", "add", "reapply", "disable", "init", "check-rules"},
	"maintenance":     {"run"},
}

var (
	gitSpecsOnce sync.Once
	gitSpecs     map[string]*optSpec
)

// gitSpec builds a subcommand's option table, with the --no-NAME form of
// every long option, as parse-options accepts.
func gitSpec(sub string) *optSpec {
	gitSpecsOnce.Do(func() {
		gitSpecs = map[string]*optSpec{}
		for s, t := range gitOptionTables {
			var long []string
			seen := map[string]bool{}
			for _, l := range strings.Fields(t[1] + " help") {
				n := strings.TrimRight(l, "=?")
				if !seen[n] {
					seen[n] = true
					long = append(long, l)
				}
			}
			for _, l := range strings.Fields(t[1]) {
				n := strings.TrimRight(l, "=?")
				if !strings.HasPrefix(n, "no-") && !seen["no-"+n] {
					seen["no-"+n] = true
					long = append(long, "no-"+n)
				}
			}
			gitSpecs[s] = spec(t[0]+"h", long...).permuting()
		}
	})
	return gitSpecs[sub]
}

func gitModel() *model {
	return &model{handler: func(a *analyzer, name string, words []word, fr frame) []word {
		return a.gitOptions(words, &fr)
	}}
}

// gitSub judges a git subcommand's options and operands against its
// table.
func (a *analyzer) gitSub(sub string, words []word, fr frame) {
	name := "git " + sub
	if sub == "stage" {
		sub = "add"
	}
	sp := gitSpec(sub)
	if sp == nil {
		a.fail(CodeUnknownOption, "git %s is not a subcommand the gate models (an alias, or a git-%s program found in PATH, runs what it runs)", quote(sub), sub)
		return
	}
	args := words
	verb := ""
	if modes, ok := gitModes[sub]; ok {
		// The verb comes first (git stash list); git stash -u is push.
		if len(args) > 1 && args[1].Literal && !strings.HasPrefix(args[1].Text, "-") {
			verb = args[1].Text
			args = append([]word{args[0]}, args[2:]...)
		} else if len(args) > 1 && !args[1].Literal {
			a.refuseOption("git", "%s is given %s, which is computed when the line runs", sub, quote(args[1].Text))
			return
		}
		known := false
		for _, m := range modes {
			known = known || m == verb
		}
		if !known {
			a.fail(CodeUnknownOption, "git %s %s is not a verb the gate models", sub, quote(verb))
			return
		}
		if verb != "" {
			name += " " + verb
		}
	}
	p := sp.parseStrict(args, sub == "log" || sub == "show" || sub == "whatchanged" || sub == "rev-list" || sub == "format-patch" || sub == "shortlog", nil)
	switch {
	case p.unknown != "":
		a.fail(CodeUnknownOption, "%s is given the option %s, which the gate does not model", name, quote(p.unknown))
		return
	case p.computed != "":
		a.refuseOption("git", "%s is given %s, which is computed when the line runs and may be an option such as --output", sub, quote(p.computed))
		return
	}
	for _, o := range p.opts {
		if a.err != nil {
			return
		}
		why, ok := gitRefused[sub][o.name]
		if !ok {
			why, ok = gitRefused["*"][o.name]
		}
		if ok {
			a.refuseOption("git", "%s %s %s", sub, o.name, why)
			return
		}
		switch o.name {
		case "-s", "--strategy":
			if sub == "merge" || sub == "rebase" || sub == "pull" || sub == "cherry-pick" || sub == "revert" {
				if !o.arg.Literal || !gitStrategies[o.arg.Text] {
					a.refuseOption("git", "%s %s %s runs git-merge-%s, a program found in PATH", sub, o.name, quote(o.arg.Text), o.arg.Text)
					return
				}
			}
		case "-c", "--config":
			if sub == "clone" && (!o.arg.Literal || !gitSafeKey(o.arg.Text)) {
				a.refuseOption("git", "clone %s %s sets a configuration key that can run a program or load other files", o.name, quote(o.arg.Text))
				return
			}
		}
		if !o.hasArg {
			continue
		}
		e, ok := gitValues[sub][o.name]
		if !ok {
			e = gitValues["*"][o.name]
		}
		a.effect(name, o.name, e, o.arg, fr)
	}
	if a.err == nil {
		a.gitOperands(sub, verb, &p, fr)
	}
}

// gitOperands applies what a subcommand does with its operands.
func (a *analyzer) gitOperands(sub, verb string, p *parsedArgs, fr frame) {
	ops := p.operands
	switch sub {
	case "diff":
		if p.has("--no-index") {
			for _, w := range ops {
				a.read(w, fr)
			}
		}
	case "grep":
		if p.has("--no-index") {
			rest := ops
			if !p.has("-e", "-f") && len(rest) > 0 {
				rest = rest[1:]
			}
			for _, w := range rest {
				a.read(w, fr)
			}
		}
	case "rm":
		if !p.has("--cached", "-n", "--dry-run") {
			for _, w := range ops {
				a.gitPathspecWrite("git rm", w, p.has("-r"), fr)
			}
		}
	case "mv":
		if !p.has("-n", "--dry-run") {
			for _, w := range ops {
				a.gitPathspecWrite("git mv", w, true, fr)
			}
		}
	case "hash-object":
		for _, w := range ops {
			a.read(w, fr)
		}
		if p.has("--stdin-paths") {
			a.unknownRead("git hash-object --stdin-paths reads the files its input names", fr)
		}
	case "apply", "am":
		for _, w := range ops {
			a.read(w, fr)
		}
		if !p.has("--stat", "--numstat", "--summary", "--check", "--cached") && !(sub == "am" && p.has("--abort", "--quit", "--skip", "--show-current-patch")) {
			a.unknownWrite("git "+sub+" writes the files its patches name", fr)
		}
	case "format-patch":
		if !p.has("--stdout", "-o", "--output-directory") {
			a.unknownWrite("git format-patch writes its patches into the working directory", fr)
		}
	case "clone":
		if len(ops) > 0 && !remote(ops[0]) {
			a.read(ops[0], fr)
		}
		if len(ops) > 1 {
			a.writeTree(ops[1], false, true, fr)
		} else {
			a.unknownWrite("git clone creates a directory named after the repository", fr)
		}
	case "init":
		dir := literalWord(".")
		if len(ops) > 0 {
			dir = ops[0]
		}
		a.write(dir, false, fr) // a repository in DIR/.git, or DIR itself when bare
	case "config":
		a.gitConfig(p, fr)
	case "worktree":
		switch verb {
		case "add", "remove", "move":
			for i, w := range ops {
				if verb == "add" && i > 0 {
					break // the commit
				}
				a.writeTree(w, false, true, fr)
			}
		}
	case "submodule":
		switch verb {
		case "add":
			a.unknownWrite("git submodule add clones into the workspace", fr)
		case "update", "init", "deinit", "sync", "absorbgitdirs":
			a.unknownWrite("git submodule "+verb+" checks out or removes the submodules' files", fr)
		}
	case "bisect":
		switch verb {
		case "run":
			if len(ops) > 0 {
				a.exec(ops, nil, fr.wrapped("git"), byProgram)
			}
		case "replay":
			for _, w := range ops {
				a.read(w, fr)
			}
		}
	case "bundle":
		switch verb {
		case "create":
			if len(ops) > 0 {
				a.write(ops[0], false, fr)
			}
		case "verify", "list-heads", "unbundle":
			if len(ops) > 0 {
				a.read(ops[0], fr)
			}
		}
	case "notes":
		if verb == "edit" {
			a.refuseOption("git", "notes edit opens an editor")
		}
	case "sparse-checkout":
		if verb != "list" && verb != "check-rules" {
			a.unknownWrite("git sparse-checkout "+verb+" adds and removes files in the work tree", fr)
		}
	case "maintenance":
	}
}

// gitPathspecWrite records a pathspec git rm or git mv writes: a literal
// path, or one that matches files only known when the line runs.
func (a *analyzer) gitPathspecWrite(name string, w word, tree bool, fr frame) {
	if !w.Literal || strings.ContainsAny(w.Text, "*?[:") {
		a.unknownWrite(name+" writes the files the pathspec "+quote(w.Text)+" matches", fr)
		return
	}
	a.writeTree(w, false, tree, fr)
}

// gitConfig judges git config: reading is fine; setting a key must be a
// key of gitSafeConfig, and --global or --file writes that file.
func (a *analyzer) gitConfig(p *parsedArgs, fr frame) {
	ops := p.operands
	// git config get|list|set|unset … (git 2.46)
	if len(ops) > 0 && ops[0].Literal {
		switch ops[0].Text {
		case "get", "list":
			return
		case "set", "unset", "rename-section", "remove-section", "edit":
			verb := ops[0].Text
			ops = ops[1:]
			switch verb {
			case "edit":
				a.refuseOption("git", "config edit opens an editor on the configuration")
				return
			case "rename-section":
				a.refuseOption("git", "config rename-section can move keys into a section whose keys run programs")
				return
			case "set":
				a.gitConfigSet(p, ops, fr)
				return
			}
			a.gitConfigFile(p, fr)
			return
		}
	}
	reading := p.has("--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "--get-color",
		"--get-colorbool") || len(ops) <= 1 && !p.has("--unset", "--unset-all", "--remove-section", "--add", "--replace-all")
	switch {
	case reading:
	case p.has("--unset", "--unset-all", "--remove-section"):
		a.gitConfigFile(p, fr)
	default:
		a.gitConfigSet(p, ops, fr)
	}
}

func (a *analyzer) gitConfigSet(p *parsedArgs, ops []word, fr frame) {
	if len(ops) < 2 {
		return
	}
	key, value := ops[0], ops[1]
	if !key.Literal || !value.Literal || !gitSafeKey(key.Text+"="+value.Text) {
		a.refuseOption("git", "config sets %s, a key that can run a program or load other files", quote(key.Text))
		return
	}
	a.gitConfigFile(p, fr)
}

// gitConfigFile records the file git config changes outside the
// repository's own configuration.
func (a *analyzer) gitConfigFile(p *parsedArgs, fr frame) {
	switch {
	case p.has("--global"):
		a.write(word{Word: Word{Text: "~/.gitconfig"}, lead: '/', prefix: "~/.gitconfig", expands: false}, false, fr)
	case p.has("-f", "--file"):
		a.write(p.get("-f", "--file").arg, false, fr)
	}
}
