package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

func init() {
	register(&command{name: "completion", summary: "print a shell completion script: bash, zsh or fish", run: runCompletion})
}

// subcommands are the second words completion offers after a command.
var subcommands = map[string][]string{
	"grant":       {"issue", "ls", "show", "use", "allow", "renew", "revoke"},
	"receipts":    {"ls", "show", "verify", "export", "prove", "verify-proof", "checkpoint"},
	"receipt":     {"verify"},
	"store":       {"migrate", "check", "accept-loss", "backup", "restore"},
	"completion":  {"bash", "zsh", "fish"},
	"conformance": {"gen", "check"},
	"gate":        {"serve", "status", "stop"},
	"witness":     {"status", "sync", "log", "init", "add-log", "serve"},
	"help":        nil, // filled with the command names
}

func runCompletion(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "completion", `completion bash|zsh|fish

Prints a completion script for the shell; load it with
  bash:  source <(joule completion bash)       (or save it in /etc/bash_completion.d/joule)
  zsh:   source <(joule completion zsh)        (after compinit)
  fish:  joule completion fish | source        (or save it as ~/.config/fish/completions/joule.fish)
It completes command names and their subcommands.`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("completion: want one shell: bash, zsh or fish")
	}
	names := []string{"version"}
	for _, c := range commands {
		names = append(names, c.name)
	}
	sort.Strings(names)
	subs := map[string][]string{}
	for k, v := range subcommands {
		if lookup(k) != nil || k == "help" {
			subs[k] = v
		}
	}
	subs["help"] = names
	keys := make([]string, 0, len(subs))
	for k := range subs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	switch fs.Arg(0) {
	case "bash":
		fmt.Fprintf(&b, "# bash completion for joule\n_joule() {\n\tlocal cur=${COMP_WORDS[COMP_CWORD]}\n\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n\t\treturn\n\tfi\n\tif [ \"$COMP_CWORD\" -eq 2 ]; then\n\t\tcase ${COMP_WORDS[1]} in\n", strings.Join(names, " "))
		for _, k := range keys {
			fmt.Fprintf(&b, "\t\t%s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", k, strings.Join(subs[k], " "))
		}
		b.WriteString("\t\tesac\n\tfi\n\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n}\ncomplete -o default -F _joule joule\n")
	case "zsh":
		fmt.Fprintf(&b, "#compdef joule\n# zsh completion for joule\n_joule() {\n\tif (( CURRENT == 2 )); then\n\t\tcompadd -- %s\n\t\treturn\n\tfi\n\tif (( CURRENT == 3 )); then\n\t\tcase ${words[2]} in\n", strings.Join(names, " "))
		for _, k := range keys {
			fmt.Fprintf(&b, "\t\t%s) compadd -- %s; return ;;\n", k, strings.Join(subs[k], " "))
		}
		b.WriteString("\t\tesac\n\tfi\n\t_files\n}\nif [ \"$funcstack[1]\" = \"_joule\" ]; then\n\t_joule \"$@\"\nelse\n\tcompdef _joule joule\nfi\n")
	case "fish":
		b.WriteString("# fish completion for joule\ncomplete -c joule -f\n")
		byName := map[string]string{"version": "print the version"}
		for _, c := range commands {
			byName[c.name] = c.summary
		}
		for _, n := range names {
			fmt.Fprintf(&b, "complete -c joule -n __fish_use_subcommand -a %s -d %s\n", n, fishQuote(byName[n]))
		}
		for _, k := range keys {
			fmt.Fprintf(&b, "complete -c joule -n '__fish_seen_subcommand_from %s' -a %s\n", k, fishQuote(strings.Join(subs[k], " ")))
		}
	default:
		return usagef("completion: unknown shell %q (want bash, zsh or fish)", fs.Arg(0))
	}
	_, err := fmt.Fprint(e.stdout, b.String())
	return err
}

func fishQuote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}
