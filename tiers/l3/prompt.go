package l3

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
)

const systemPrompt = `You edit a code repository. Answer only with edit blocks, one per change, each exactly in this form:

path/to/file.go
<<<<<<< SEARCH
lines copied exactly from the current file, indentation included
=======
the lines that replace them
>>>>>>> REPLACE

Rules:
- The path is relative to the repository root, alone on the line before "<<<<<<< SEARCH".
- The SEARCH lines must occur exactly once in the file: include enough lines to be unique.
- To create a new file, leave the SEARCH part empty.
- Several blocks may edit the same file; they apply in order.
- Keep the code compiling: add the imports you use, remove the ones you stop using.
- If the request needs no change to the files, or you cannot make it, answer NO_EDIT and one sentence why.`

// userPrompt puts the request, the tree's file list and the code L2 found
// (whole files where they fit, else the snippets) into one message.
func userPrompt(req *tiers.Request, files core.Files, budget int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Request: %s\n", strings.TrimSpace(req.Prompt))
	paths := files.Paths()
	sort.Strings(paths)
	const maxList = 300
	fmt.Fprintf(&sb, "\nRepository files (%d):\n", len(paths))
	for i, p := range paths {
		if i == maxList {
			fmt.Fprintf(&sb, "… and %d more\n", len(paths)-maxList)
			break
		}
		sb.WriteString(p + "\n")
	}
	// Files the request names or L2 found, in that order, whole if they fit.
	var want []string
	seen := map[string]bool{}
	add := func(p string) {
		if _, ok := files[p]; ok && !seen[p] {
			seen[p] = true
			want = append(want, p)
		}
	}
	for _, p := range paths {
		if strings.Contains(req.Prompt, p) {
			add(p)
		}
	}
	for _, sn := range req.Context {
		add(sn.Path)
	}
	used := 0
	whole := map[string]bool{}
	for _, p := range want {
		b := files[p]
		if used+len(b) > budget {
			continue
		}
		used += len(b)
		whole[p] = true
		fmt.Fprintf(&sb, "\n%s\n```\n%s", p, b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			sb.WriteByte('\n')
		}
		sb.WriteString("```\n")
	}
	for _, sn := range req.Context {
		if whole[sn.Path] || used+len(sn.Text) > budget {
			continue
		}
		used += len(sn.Text)
		label := fmt.Sprintf("%s lines %d-%d", sn.Path, sn.StartLine, sn.EndLine)
		if sn.Symbol != "" {
			label += " (" + sn.Symbol + ")"
		}
		fmt.Fprintf(&sb, "\nExcerpt of %s\n```\n%s\n```\n", label, strings.TrimRight(sn.Text, "\n"))
	}
	return sb.String()
}

// repairPrompt feeds a failed candidate's errors back.
func repairPrompt(err error) string {
	var sb strings.Builder
	sb.WriteString("Your edit was not applied: ")
	var ve *ValidationError
	if errors.As(err, &ve) {
		fmt.Fprintf(&sb, "%s failed with:\n```\n%s\n```\n", ve.Step, ve.Output)
	} else {
		sb.WriteString(err.Error() + "\n")
	}
	sb.WriteString("The files are as they were before your edit. Answer again with complete edit blocks against the original files.")
	return sb.String()
}
