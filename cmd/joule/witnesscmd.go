package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/witness"
)

func init() {
	register(&command{name: "witness", summary: "have witnesses elsewhere cosign the receipts log (status, sync, log), or run one (init, add-log, serve)", run: runWitness})
}

const witnessUsage = `witness status | witness sync | witness log
       witness init --name NAME [--state DIR]
       witness add-log --origin ORIGIN --key VKEY [--state DIR]
       witness serve [--listen 127.0.0.1:7380] [--state DIR]

A witness elsewhere (c2sp.org/tlog-witness: litewitness, another joule's
'witness serve') cosigns each checkpoint of this home's receipts log, so
that a store rolled back or replaced is found even by whoever can rewrite
everything in $JOULE_HOME. config.json's witness.witnesses names them and
witness.quorum how many must have cosigned before an action is allowed
(docs/receipts.md, "The witness").

status prints what each configured witness cosigned last, from this home's
files, and whether the store extends it; sync has every witness cosign the
log as it is now (exit status 1 if one fails); log prints this home's log
origin and key, which a witness's operator adds.

init creates a witness of your own in DIR (default $JOULE_HOME/witness-server)
and prints its key, the vkey a log's config.json names; add-log makes it
know a log (its origin and the key that signs its checkpoints, from that
log's 'joule witness log'); serve answers add-checkpoint requests over
HTTP (put TLS in front of it to serve beyond this machine).`

func runWitness(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("witness: want a subcommand: status, sync, log, init, add-log or serve (run 'joule witness -h')")
	}
	sub, rest := args[0], args[1:]
	fs := newFlags(e, "witness "+sub, witnessUsage)
	state := fs.String("state", "", "init, add-log, serve: the witness's state directory (default $JOULE_HOME/witness-server)")
	name := fs.String("name", "", "init: the witness's name, as in its cosignature lines (such as example.com/witness)")
	origin := fs.String("origin", "", "add-log: the log's origin, the first line of its checkpoints")
	var keys stringList
	fs.Var(&keys, "key", "add-log: a verifier key that signs the log's checkpoints (repeat for more)")
	listen := fs.String("listen", "127.0.0.1:7380", "serve: the address to listen on")
	switch sub {
	case "-h", "--help", "help":
		fmt.Fprintf(e.stdout, "usage: joule %s\n", witnessUsage)
		return nil
	case "status", "sync", "log", "init", "add-log", "serve":
	default:
		return unknownSub("witness", sub, "status", "sync", "log", "init", "add-log", "serve")
	}
	if err := parseFlags(fs, rest); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	switch sub {
	case "status", "sync":
		ep, err := openEndpoint()
		if err != nil {
			return err
		}
		defer ep.Close()
		return witnessStatus(ctx, e, ep, sub == "sync")
	case "log":
		id, err := identity.Load(homeOrEmpty())
		if err != nil {
			return withHint(err, "run 'joule init' (or 'joule keygen')")
		}
		o := logOrigin(id.Steward)
		fmt.Fprintf(e.stdout, "origin  %s\nkey     %s\n\nA witness's operator adds this log with\n", o, id.VerifierKey)
		fmt.Fprintf(e.stdout, "  joule witness add-log --origin %s --key %s\n", shellQuote(o), shellQuote(id.VerifierKey))
		fmt.Fprintf(e.stdout, "or, for litewitness,\n  witnessctl add-log -db litewitness.db -origin %s\n  witnessctl add-key -db litewitness.db -origin %s -key %s\n", shellQuote(o), shellQuote(o), shellQuote(id.VerifierKey))
		return nil
	}
	dir := *state
	if dir == "" {
		home := homeOrEmpty()
		if home == "" {
			return usagef("witness %s: give --state DIR", sub)
		}
		dir = filepath.Join(home, "witness-server")
	}
	switch sub {
	case "init":
		if *name == "" {
			return usagef("witness init: want --name NAME (such as example.com/witness)")
		}
		v, err := witness.InitServer(dir, *name)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "witness %s in %s\nvkey    %s\n\nA log's config.json names it as {\"name\": %q, \"url\": \"http://HOST:7380\", \"vkey\": %q}\nin witness.witnesses; add each log with 'joule witness add-log'.\n", v.Name(), dir, v, v.Name(), v.String())
		return nil
	case "add-log":
		if *origin == "" || len(keys) == 0 {
			return usagef("witness add-log: want --origin ORIGIN and --key VKEY (the log's 'joule witness log' prints both)")
		}
		srv, err := witness.OpenServer(dir, nil)
		if err != nil {
			return err
		}
		if err := srv.AddLog(*origin, keys); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "witness %s knows the log %q (%d keys)\n", srv.Verifier().Name(), *origin, len(keys))
		return nil
	}
	return witnessServe(ctx, e, dir, *listen)
}

// stringList is a flag that may be given more than once.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func homeOrEmpty() string {
	h, err := identity.Home()
	if err != nil {
		return ""
	}
	return h
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=.:_-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// witnessStatus prints each configured witness's last cosigned checkpoint,
// after a round of cosigning the log now when sync is set.
func witnessStatus(ctx context.Context, e *env, ep *endpoint, sync bool) error {
	w := ep.store.Witness()
	if w == nil || len(w.Cosigners) == 0 {
		return withHint(errors.New("no witness elsewhere is configured"), "name one in config.json's witness.witnesses (docs/receipts.md, \"The witness\")")
	}
	size, err := ep.store.LogSize(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "log      %s, %d receipts\n", w.Origin, size)
	if w.Quorum > 0 {
		fmt.Fprintf(e.stdout, "quorum   %d of %d witnesses must have cosigned the log before an action is allowed\n", w.Quorum, len(w.Cosigners))
	} else {
		fmt.Fprintf(e.stdout, "quorum   none: the witnesses cosign when they can, and nothing waits for them\n")
	}
	failed := map[string]error{}
	var syncErr error
	if sync {
		syncErr = ep.store.Cosign(ctx)
		var qe *store.QuorumError
		if errors.As(syncErr, &qe) {
			for _, f := range qe.Failures {
				var ce *store.CosignerError
				if errors.As(f, &ce) {
					failed[ce.Witness] = ce.Err
				}
			}
		} else if syncErr != nil {
			return syncErr
		}
	}
	for _, c := range w.Cosigners {
		cl := c.(*witness.Client)
		name := cl.Key.Name()
		fmt.Fprintf(e.stdout, "witness  %s at %s\n", name, cl.Where())
		if err, ok := failed[name]; ok {
			fmt.Fprintf(e.stdout, "         FAILED: %v\n", err)
		}
		file := w.CosignedFile(c)
		cp, msg, err := store.ReadCosignedFile(file, w.Origin, w.Verifier, c.Verifier())
		switch {
		case err != nil:
			fmt.Fprintf(e.stdout, "         FAILED: %v\n", err)
			continue
		case cp == nil:
			fmt.Fprintf(e.stdout, "         nothing cosigned yet (%s)\n", file)
			continue
		}
		at := cosignedAt(msg, c.Verifier())
		extends := "the store extends it (consistency proof checked)"
		if err := proveExtends(ctx, ep.store, cp, size); err != nil {
			extends = "FAILED: " + err.Error()
		}
		fmt.Fprintf(e.stdout, "         cosigned the log of size %d at %s; %s\n", cp.Size, at, extends)
	}
	if syncErr != nil {
		if qe := (*store.QuorumError)(nil); errors.As(syncErr, &qe) && !qe.Met() {
			return withHint(syncErr, "start the witness, or check config.json's witness.witnesses; the gate denies every action until the quorum cosigns")
		}
		return &exitError{1}
	}
	return nil
}

// cosignedAt is when the witness with v says it cosigned msg.
func cosignedAt(msg []byte, v note.Verifier) string {
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return "an unknown time"
	}
	for _, s := range n.Sigs {
		if t, err := witness.SignatureTime(s); err == nil {
			return t.Format(time.RFC3339)
		}
	}
	return "an unknown time"
}

// witnessServe runs the witness in dir on addr until ctx ends.
func witnessServe(ctx context.Context, e *env, dir, addr string) error {
	srv, err := witness.OpenServer(dir, nil)
	if err != nil {
		return err
	}
	logs, err := srv.Logs()
	if err != nil {
		return err
	}
	srv.OnRequest = func(origin string, status int, detail string) {
		fmt.Fprintf(e.stderr, "%s add-checkpoint %q: %d %s\n", time.Now().UTC().Format(time.RFC3339), origin, status, detail)
	}
	ln, err := listenOn(addr, "give joule witness serve --listen 127.0.0.1:PORT")
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "witness %s listening on http://%s (%d logs known)\nvkey    %s\n", srv.Verifier().Name(), ln.Addr(), len(logs), srv.Verifier())
	if len(logs) == 0 {
		fmt.Fprintln(e.stdout, "note    it knows no log yet: add one with 'joule witness add-log'")
	}
	hs := &http.Server{Handler: srv, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return hs.Shutdown(sctx)
	}
}
