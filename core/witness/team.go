package witness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/joulehook/joule/core/store"
)

// Checkpoint fetches the newest checkpoint the witness cosigned of the log
// origin (GET URL/<hex SHA-256 of origin>/checkpoint, as joule witness
// serve answers): nil and no error when it has cosigned none (404).
func (c *Client) Checkpoint(ctx context.Context, origin string) ([]byte, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h := sha256.Sum256([]byte(origin))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/"+hex.EncodeToString(h[:])+"/checkpoint", nil)
	if err != nil {
		return nil, err
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("witness %s (%s): %v", c.Key.Name(), c.Where(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, nil
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("witness %s (%s): checkpoint of %q: %s", c.Key.Name(), c.Where(), origin, resp.Status)
	case err != nil:
		return nil, err
	}
	return body, nil
}

// TeamLog is one machine of a team, as its witness knows it: the origin
// of its log ("joule receipts log STEWARD") and the key of its
// checkpoints.
type TeamLog struct {
	Origin string
	Key    note.Verifier
}

// CheckTeam checks st against what the witness c cosigned of every
// machine of the team. Each machine signs checkpoints of the shared log as
// its own log, so a rollback or truncation that took out receipts another
// machine appended leaves this machine's own witness satisfied; this
// check sees it on every machine. For each log it checks:
//
//   - the newest checkpoint the witness serves back (GET, as joule witness
//     serve answers), verified (signed by the log's key and cosigned by
//     c's), must be extended by st;
//   - the newest cosigned checkpoint of that log kept in the store
//     (store.CosignedOf, written by the machine that was cosigned),
//     verified the same way, must be extended by st; and the witness is
//     asked, through the protocol itself, whether it has cosigned more of
//     that log since: that checkpoint is sent again as add-checkpoint from
//     its own size. A witness at that very checkpoint cosigns it again
//     (nothing changes); one that cosigned a larger log answers 409 with
//     its size, and a store holding fewer receipts than that was rolled
//     back or truncated, whatever its tables say (litewitness serves no
//     checkpoints back, so this is how a team on it is checked).
//
// It returns how many logs it checked and the first failure: an error
// wrapping store.ErrRolledBack, or one that says the witness could not be
// asked or answered wrongly, or that the store lacks a checkpoint the
// witness cosigned (ErrMissing: a machine that has not yet written it, or
// rows taken out). With every (store check), each cosigned checkpoint in
// the store is verified, not only the newest (store.CosignedOf).
func CheckTeam(ctx context.Context, st *store.Store, c *Client, logs []TeamLog, every bool) (int, error) {
	// Ask for every log at once: one round trip, however large the team.
	type answer struct {
		checked bool
		err     error
	}
	answers := make([]answer, len(logs))
	var wg sync.WaitGroup
	for i, l := range logs {
		wg.Go(func() {
			answers[i].checked, answers[i].err = checkTeamLog(ctx, st, c, l, every)
		})
	}
	wg.Wait()
	checked := 0
	for _, a := range answers {
		if a.err != nil {
			return checked, a.err
		}
		if a.checked {
			checked++
		}
	}
	return checked, nil
}

// ErrMissing: the witness has cosigned a checkpoint of a team's machine
// that the store does not hold, though the store is large enough for it.
var ErrMissing = errors.New("the store lacks a checkpoint the witness cosigned")

// missingWait is how long CheckTeam waits, once, for a machine to write
// the checkpoint a witness has just cosigned for it.
var missingWait = 300 * time.Millisecond

func checkTeamLog(ctx context.Context, st *store.Store, c *Client, l TeamLog, every bool) (bool, error) {
	checked := false
	msg, err := c.Checkpoint(ctx, l.Origin)
	if err != nil {
		return false, err
	}
	if msg != nil {
		cp, err := store.OpenCosigned(msg, l.Origin, l.Key, c.Key)
		if err != nil {
			return false, fmt.Errorf("witness %s: checkpoint of %q: %v", c.Key.Name(), l.Origin, err)
		}
		if err := st.CheckExtends(ctx, &cp, fmt.Sprintf("%s, its cosigned checkpoint of %s", c.Key.Name(), l.Key.Name())); err != nil {
			return false, err
		}
		checked = true
	}
	for attempt := 0; ; attempt++ {
		cp, msg, err := st.CosignedOf(ctx, l.Origin, l.Key, c.Key, every)
		if err != nil || cp == nil {
			return checked, err
		}
		from := fmt.Sprintf("%s's checkpoint of %s kept in the store", c.Key.Name(), l.Key.Name())
		if err := st.CheckExtends(ctx, cp, from); err != nil {
			return false, err
		}
		known, err := probe(ctx, c, l, cp, msg)
		if err != nil || known <= cp.Size {
			return err == nil, err
		}
		size, err := st.LogSize(ctx)
		if err != nil {
			return false, err
		}
		if size < known {
			return false, fmt.Errorf("%w: witness %s has cosigned %s's log at %d receipts, but the store holds %d: it was truncated or restored from an older copy", store.ErrRolledBack, c.Key.Name(), l.Key.Name(), known, size)
		}
		if attempt > 0 {
			return false, fmt.Errorf("witness %s: %w: it has cosigned %s's log at %d receipts, and the newest checkpoint of it in the store is of %d", c.Key.Name(), ErrMissing, l.Key.Name(), known, cp.Size)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(missingWait):
		}
	}
}

// probe sends cp (the log's signature on it only) to the witness as an
// add-checkpoint from its own size: the size of that log the witness has
// cosigned, verified as cp itself when it cosigns it again.
func probe(ctx context.Context, c *Client, l TeamLog, cp *store.Checkpoint, cosigned []byte) (int64, error) {
	n, err := note.Open(cosigned, note.VerifierList(l.Key))
	var unverified *note.UnverifiedNoteError
	if err != nil && !errors.As(err, &unverified) {
		return 0, fmt.Errorf("witness %s: checkpoint of %q: %v", c.Key.Name(), l.Origin, err)
	}
	if n == nil {
		n = unverified.Note
	}
	var signed []byte
	for _, s := range n.Sigs {
		if s.Name == l.Key.Name() && s.Hash == l.Key.KeyHash() {
			signed = append(append([]byte(n.Text), '\n'), signatureLine(s)...)
			break
		}
	}
	if signed == nil {
		return 0, fmt.Errorf("witness %s: checkpoint of %q is not signed by %s", c.Key.Name(), l.Origin, l.Key.Name())
	}
	_, err = c.AddCheckpoint(ctx, AddCheckpoint{OldSize: cp.Size, Checkpoint: signed})
	var conflict *ConflictError
	switch {
	case err == nil:
		return cp.Size, nil
	case errors.As(err, &conflict) && conflict.Known < cp.Size:
		return 0, fmt.Errorf("witness %s: %w: it says it cosigned %s's log at %d receipts, but its cosignature of %d is in the store", c.Key.Name(), ErrBadAnswer, l.Key.Name(), conflict.Known, cp.Size)
	case errors.As(err, &conflict):
		return conflict.Known, nil
	case errors.Is(err, ErrInconsistent):
		return 0, fmt.Errorf("%w: the witness %s holds another log of %s at %d receipts than the one it cosigned: %w", store.ErrRolledBack, c.Key.Name(), l.Key.Name(), cp.Size, err)
	}
	return 0, err
}
