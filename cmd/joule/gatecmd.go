package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/plugins/hook/resident"
)

func init() {
	register(&command{name: "gate", summary: "decide one ActionEvent read as JSON on stdin (the host-agnostic seam)", run: runGate})
}

func runGate(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return runGateServe(ctx, e, args[1:])
		case "status":
			return runGateStatus(e, args[1:])
		case "stop":
			return runGateStop(e, args[1:])
		}
	}
	fs := newFlags(e, "gate", `gate < event.json | gate serve | gate status | gate stop

Reads one ActionEvent {"session_id","tool","input","cwd","content_id"} and
prints the decision as JSON: {"decision":"allow|deny|ask|rewrite","code",
"reason","session","sequence","receipt","grants","debit_uj"}. The decision is
sealed as a receipt before it is printed. Every failure (bad input, no grant,
a locked store) is a deny with a specific code; the exit status is 0 whenever
a decision was printed.

'joule gate serve' runs the resident gate joule-hook clients ask (they
start it themselves); 'joule gate status' and 'joule gate stop' show and
stop it. See docs/gate.md, "The resident gate".`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	// Within the hook budget, as joule hook: a decision that waits is a
	// deny.
	done := make(chan gate.Result, 1)
	go func() { done <- decideStdin(ctx, e) }()
	budget := resident.Budget(os.Getenv)
	var res gate.Result
	select {
	case res = <-done:
	case <-time.After(budget):
		res = gate.Result{Decision: gate.Deny, Code: gate.CodeInternal, Reason: fmt.Sprintf("no decision within %v: a file of $JOULE_HOME that blocks (a FIFO, a lock held) or a store that does not answer; run 'joule doctor'", budget)}
	}
	b, _ := json.Marshal(res)
	fmt.Fprintf(e.stdout, "%s\n", b)
	return nil
}

// decideStdin reads one event and decides it, failing closed on anything.
func decideStdin(ctx context.Context, e *env) (res gate.Result) {
	defer func() {
		if p := recover(); p != nil {
			res = gate.Result{Decision: gate.Deny, Code: gate.CodeInternal, Reason: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	b, err := readAllLimitedN(e.stdin, gate.MaxEventSize)
	if err != nil {
		return gate.Result{Decision: gate.Deny, Code: gate.CodeMalformed, Reason: err.Error()}
	}
	ep, err := openEndpoint()
	if err != nil {
		reason := err.Error()
		if errors.Is(err, identity.ErrNoKey) {
			reason += "; run 'joule init'"
		}
		return gate.Result{Decision: gate.Deny, Code: endpointCode(err), Reason: reason}
	}
	// The store stays open until exit: see the note above openEndpoint.
	g, err := ep.gate()
	if err != nil {
		return gate.Result{Decision: gate.Deny, Code: gate.CodeGrantInvalid, Reason: err.Error()}
	}
	return g.DecideJSON(ctx, b)
}

// endpointCode names why $JOULE_HOME could not be opened: no key means no
// grant can exist; anything else is the store or the configuration.
func endpointCode(err error) string {
	switch {
	case errors.Is(err, identity.ErrNoKey):
		return gate.CodeNoActiveGrant
	case errors.Is(err, identity.ErrKeyUnusable):
		return gate.CodeKeyUnusable
	case errors.Is(err, errIssuersFile):
		return gate.CodeIssuersUnsigned
	}
	return gate.CodeStoreError
}
