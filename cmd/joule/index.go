package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/tiers/l2"
)

func init() {
	register(&command{name: "index", summary: "build or update the workspace index behind tier L2 (retrieval), or show its status", run: runIndex})
}

func runIndex(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "index", `index [--root DIR] [--status] [--search QUERY] [--embed-ollama URL | --embed-openai URL] [--embed-model NAME]

Builds or incrementally updates the index of a workspace that tier L2
retrieves from: files are re-read only when their content hash changed,
.gitignore files are honoured, binaries and files over 1 MiB are skipped.
Progress goes to stderr, the summary to stdout. The index is a cache in
$JOULE_HOME/index/; deleting it only costs a rebuild.

With an embedding model (Ollama's /api/embed, or an OpenAI-compatible
/v1/embeddings whose key is read from $JOULE_EMBED_API_KEY or
$OPENAI_API_KEY), chunks are embedded and search is hybrid; without one,
retrieval is lexical and symbolic only, and says so.`)
	root := fs.String("root", ".", "the workspace `dir`ectory")
	status := fs.Bool("status", false, "print the index's status without updating it")
	search := fs.String("search", "", "after updating, print the top hits for `query`")
	db := fs.String("db", "", "the index `file` (default $JOULE_HOME/index/<hash of root>.db)")
	ollama := fs.String("embed-ollama", "", "embed with the Ollama server at `url` (e.g. http://127.0.0.1:11434)")
	openai := fs.String("embed-openai", "", "embed with the OpenAI-compatible API at `url` (e.g. http://127.0.0.1:8000/v1)")
	model := fs.String("embed-model", "nomic-embed-text", "the embedding `model`")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *ollama != "" && *openai != "" {
		return usagef("index: --embed-ollama and --embed-openai are exclusive")
	}
	path := *db
	if path == "" {
		home, err := identity.Home()
		if err != nil {
			return err
		}
		path = l2.DefaultPath(home, *root)
	}
	var opts []l2.Option
	hc := &http.Client{Timeout: 2 * time.Minute}
	switch {
	case *ollama != "":
		opts = append(opts, l2.WithEmbedder(l2.NewOllamaEmbedder(*ollama, *model, hc)))
	case *openai != "":
		key := os.Getenv("JOULE_EMBED_API_KEY")
		if key == "" {
			key = os.Getenv("OPENAI_API_KEY")
		}
		opts = append(opts, l2.WithEmbedder(l2.NewOpenAIEmbedder(*openai, key, *model, hc)))
	}
	ix, err := l2.Open(path, *root, opts...)
	if err != nil {
		return err
	}
	defer ix.Close()
	if !*status {
		p := newIndexProgress(e.stderr)
		st, err := ix.Update(ctx, p.report)
		p.finish()
		if err != nil {
			return fmt.Errorf("index: %w", err)
		}
		fmt.Fprintf(e.stdout, "indexed %s in %s: %d files (%d added, %d changed, %d renamed, %d removed, %d unchanged, %d skipped), %d chunks",
			ix.Root(), st.Elapsed.Round(time.Millisecond), st.Files, st.Added, st.Changed, st.Renamed, st.Removed, st.Unchanged, st.Skipped, st.Chunks)
		if st.Embedded > 0 {
			fmt.Fprintf(e.stdout, ", %d embedded", st.Embedded)
		}
		fmt.Fprintln(e.stdout)
		if st.EmbedErr != nil {
			fmt.Fprintf(e.stderr, "joule: embedding stopped, retrieval stays lexical for the rest: %v\n", st.EmbedErr)
		}
	}
	s, err := ix.Status(ctx)
	if err != nil {
		return err
	}
	if *status {
		fmt.Fprintf(e.stdout, "root     %s\nindex    %s\nfiles    %d\nchunks   %d\nvectors  %d", s.Root, path, s.Files, s.Chunks, s.Vectors)
		if s.Model != "" {
			fmt.Fprintf(e.stdout, " (%s)", s.Model)
		}
		fmt.Fprintln(e.stdout)
		if !s.Updated.IsZero() {
			fmt.Fprintf(e.stdout, "updated  %s\n", s.Updated.Format(time.RFC3339))
		} else {
			fmt.Fprintln(e.stdout, "updated  never (run 'joule index')")
		}
	}
	if !ix.Semantic() {
		fmt.Fprintln(e.stdout, "retrieval: "+l2.LexicalOnly)
	}
	if *search != "" {
		hits, err := ix.Search(ctx, *search, 10)
		if err != nil {
			return err
		}
		for _, h := range hits {
			sym := ""
			if h.Symbol != "" {
				sym = " " + h.Symbol
			}
			fmt.Fprintf(e.stdout, "%s:%d-%d%s\t%.4f\t%s\n", h.Path, h.StartLine, h.EndLine, sym, h.Score, h.Why)
		}
	}
	return nil
}

// indexProgress draws one updating line on stderr: on each new phase, and
// otherwise at most ten times a second.
type indexProgress struct {
	w     io.Writer
	last  time.Time
	phase string
	drawn bool
}

func newIndexProgress(w io.Writer) *indexProgress { return &indexProgress{w: w} }

func (p *indexProgress) report(pr l2.Progress) {
	if pr.Phase == p.phase && time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last, p.phase = time.Now(), pr.Phase
	var line string
	switch pr.Phase {
	case "scan":
		line = fmt.Sprintf("scanning: %d files", pr.Done)
	case "index", "embed":
		verb := map[string]string{"index": "indexing", "embed": "embedding"}[pr.Phase]
		line = fmt.Sprintf("%s: %d/%d", verb, pr.Done, pr.Total)
		if pr.Path != "" {
			line += " " + pr.Path
		}
	default:
		return
	}
	if len(line) > 100 {
		line = line[:97] + "..."
	}
	fmt.Fprintf(p.w, "\r%-100s", line)
	p.drawn = true
}

func (p *indexProgress) finish() {
	if p.drawn {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 100))
	}
}
