package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"runtime"
	"time"

	"github.com/joulehook/joule/ui"
)

func init() {
	register(&command{name: "ui", summary: "serve a local, read-only web dashboard of the receipts, joules and grants", run: runUI})
}

func runUI(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "ui", `ui [--addr 127.0.0.1:PORT] [--open]

Serves a read-only dashboard of the store (the same store every other
command reads: SQLite or PostgreSQL) on a loopback address: the sessions with
their joules by tier and provenance, decisions and budgets; each session's
receipt chain with every receipt's verdict, envelope and Merkle inclusion
proof; charts; the grants. It prints the URL to open, which carries a token
made for this start: a request without it is refused (401). New receipts
appear in the page as they are sealed.`)
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on (port 0: any free port)")
	open := fs.Bool("open", false, "open the URL in the default browser (xdg-open)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if err := ui.CheckAddr(*addr); err != nil {
		return usagef("ui: %v", err)
	}
	ep, err := openEndpoint()
	if err != nil {
		return err
	}
	defer ep.Close()
	warnWitness(ctx, e, ep)
	keys, err := ep.keys()
	if err != nil {
		return err
	}
	g, err := ep.gate()
	if err != nil {
		return err
	}
	token, err := ui.NewToken()
	if err != nil {
		return err
	}
	srv, err := ui.New(ui.Config{Store: ep.store, Keys: keys, Trust: ep.trust, VerifierKey: ep.id.VerifierKey, Steward: ep.id.Steward, Token: token,
		ActiveChain: func(ctx context.Context, session string) ([]string, error) {
			chain, err := g.ActiveChain(ctx, session)
			if err != nil {
				return nil, err
			}
			return chain.IDs(), nil
		}, TrustState: g.TrustState})
	if err != nil {
		return err
	}
	ln, err := listenOn(*addr, "give joule ui --addr 127.0.0.1:PORT (port 0: any free port)")
	if err != nil {
		return fmt.Errorf("ui: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go srv.Warm(wctx)
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 2*time.Second)
		defer c()
		hs.Shutdown(sctx)
	}()
	url := fmt.Sprintf("http://%s/?token=%s", ln.Addr(), token)
	fmt.Fprintf(e.stdout, "joule ui: %s (store %s)\n", url, ep.store.Path())
	fmt.Fprintln(e.stdout, "joule ui: read-only; stop it with Ctrl-C")
	if *open {
		if err := openBrowser(url); err != nil {
			fmt.Fprintf(e.stderr, "joule: --open: %v; open the URL above yourself\n", err)
		}
	}
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func openBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("no %s on PATH", name)
	}
	cmd := exec.Command(p, url)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
