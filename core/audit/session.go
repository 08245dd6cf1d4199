package audit

import (
	"context"

	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

// SessionVerdicts reads a session's rows as stored, damaged ones included,
// and judges each receipt on its own (receipts.Keys.Verdicts), adding what
// only the row can tell (receipts.Verdict.CheckRow). The verdicts are in
// the order of the rows.
func SessionVerdicts(ctx context.Context, st *store.Store, keys receipts.Keys, session string) ([]store.StoredEntry, []receipts.Verdict, error) {
	rows, err := st.SessionRows(ctx, session)
	if err != nil {
		return nil, nil, err
	}
	envs := make([][]byte, len(rows))
	for i, r := range rows {
		envs[i] = r.Envelope
	}
	verdicts := keys.Verdicts(envs)
	for i, r := range rows {
		verdicts[i].CheckRow(r.Seq, r.Prev, r.Fault)
	}
	return rows, verdicts, nil
}
