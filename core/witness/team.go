package witness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"

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
// machine of the team: for each log, the newest checkpoint it cosigned,
// verified (signed by the log's key and cosigned by c's), must be
// extended by st. Each machine signs checkpoints of the shared log as its
// own log, so a rollback or truncation that took out receipts another
// machine appended leaves this machine's own witness satisfied; this
// check sees it on every machine. It returns how many checkpoints it
// checked and the first failure: an error wrapping store.ErrRolledBack, or
// one that says the witness could not be asked or answered wrongly.
func CheckTeam(ctx context.Context, st *store.Store, c *Client, logs []TeamLog) (int, error) {
	// Ask for every log at once: one round trip, however large the team.
	type answer struct {
		msg []byte
		err error
	}
	answers := make([]answer, len(logs))
	var wg sync.WaitGroup
	for i, l := range logs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i].msg, answers[i].err = c.Checkpoint(ctx, l.Origin)
		}()
	}
	wg.Wait()
	checked := 0
	for i, l := range logs {
		msg, err := answers[i].msg, answers[i].err
		if err != nil {
			return checked, err
		}
		if msg == nil {
			continue
		}
		cp, err := store.OpenCosigned(msg, l.Origin, l.Key, c.Key)
		if err != nil {
			return checked, fmt.Errorf("witness %s: checkpoint of %q: %v", c.Key.Name(), l.Origin, err)
		}
		if err := st.CheckExtends(ctx, &cp, fmt.Sprintf("%s, its cosigned checkpoint of %s", c.Key.Name(), l.Key.Name())); err != nil {
			return checked, err
		}
		checked++
	}
	return checked, nil
}
