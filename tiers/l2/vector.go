package l2

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"unicode/utf8"
)

// maxEmbedBytes bounds the text sent to the model per chunk: embedding
// models see a few thousand tokens at most, and the head of a declaration
// (doc comment, signature) carries its meaning.
const maxEmbedBytes = 4000

// vectorCache is every stored vector, loaded once after an update: search
// is a brute-force scan of normalised vectors, O(chunks × dimension).
type vectorCache struct {
	ids []int64
	dim int
	mat []float32 // len(ids) × dim, row-major, each row unit length
}

func (ix *Index) invalidateVectors() {
	ix.vecMu.Lock()
	ix.vectors = nil
	ix.vecMu.Unlock()
}

func (ix *Index) loadVectors(ctx context.Context) (*vectorCache, error) {
	ix.vecMu.RLock()
	vc := ix.vectors
	ix.vecMu.RUnlock()
	if vc != nil {
		return vc, nil
	}
	ix.vecMu.Lock()
	defer ix.vecMu.Unlock()
	if ix.vectors != nil {
		return ix.vectors, nil
	}
	rows, err := ix.db.QueryContext(ctx, `SELECT id, vec FROM chunks WHERE vec IS NOT NULL ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	vc = &vectorCache{}
	for rows.Next() {
		var (
			id   int64
			blob []byte
		)
		if err := rows.Scan(&id, &blob); err != nil {
			return nil, err
		}
		v := decodeVec(blob)
		if v == nil || (vc.dim != 0 && len(v) != vc.dim) {
			continue // a vector of another model's dimension: ignored until re-embedded
		}
		vc.dim = len(v)
		vc.ids = append(vc.ids, id)
		vc.mat = append(vc.mat, v...)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ix.vectors = vc
	return vc, nil
}

// nearest ranks the cached vectors by cosine similarity to q (a dot
// product: every row and q are unit length). Large caches are scanned in
// parallel stripes, each keeping its best n in a min-heap; the stripes'
// bests are merged.
func (vc *vectorCache) nearest(q []float32, n int) ([]int64, []float32) {
	if vc.dim == 0 || len(q) != vc.dim || n <= 0 {
		return nil, nil
	}
	rows := len(vc.ids)
	parts := min(runtime.GOMAXPROCS(0), max(1, rows/4096))
	tops := make([]topK, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tops[p] = vc.scan(q, n, p*rows/parts, (p+1)*rows/parts)
		}()
	}
	wg.Wait()
	var all topK
	for _, t := range tops {
		all = append(all, t...)
	}
	sort.Slice(all, func(a, b int) bool {
		if all[a].s != all[b].s {
			return all[a].s > all[b].s
		}
		return all[a].i < all[b].i
	})
	if len(all) > n {
		all = all[:n]
	}
	ids := make([]int64, len(all))
	sims := make([]float32, len(all))
	for k, e := range all {
		ids[k], sims[k] = vc.ids[e.i], e.s
	}
	return ids, sims
}

// scan keeps the best n rows of [from, to).
func (vc *vectorCache) scan(q []float32, n, from, to int) topK {
	h := make(topK, 0, n)
	for i := from; i < to; i++ {
		s := dot(vc.mat[i*vc.dim:(i+1)*vc.dim], q)
		if len(h) < n {
			h = append(h, scored{i, s})
			if len(h) == n {
				heap.Init(&h)
			}
			continue
		}
		if s > h[0].s {
			h[0] = scored{i, s}
			heap.Fix(&h, 0)
		}
	}
	return h
}

type scored struct {
	i int
	s float32
}

// topK is a min-heap of the best scores so far: the worst on top.
type topK []scored

func (h topK) Len() int { return len(h) }
func (h topK) Less(a, b int) bool {
	if h[a].s != h[b].s {
		return h[a].s < h[b].s
	}
	return h[a].i > h[b].i
}
func (h topK) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *topK) Push(x any)   { *h = append(*h, x.(scored)) }
func (h *topK) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// dot is the inner product, four lanes at a time.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if n == 0 {
		return out
	}
	inv := 1 / math.Sqrt(n)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

func encodeVec(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVec(b []byte) []float32 {
	if len(b) == 0 || len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// embedText is what the model sees of a chunk: where it is, what it
// declares, and its head.
func embedText(path, symbol, text string) string {
	s := path
	if symbol != "" {
		s += "\n" + symbol
	}
	s += "\n" + text
	if len(s) > maxEmbedBytes {
		s = s[:maxEmbedBytes]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

// embedPending embeds every chunk without a vector, batch by batch; a
// model change first clears the old model's vectors. A model error stops
// embedding and is returned as the reason the rest have none: the index
// stays usable lexically.
func (ix *Index) embedPending(ctx context.Context, report func(Progress)) (int, error) {
	model := ix.embedder.Model()
	var prev string
	_ = ix.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key='embed_model'`).Scan(&prev)
	if prev != model {
		if _, err := ix.db.ExecContext(ctx, `UPDATE chunks SET vec=NULL WHERE vec IS NOT NULL`); err != nil {
			return 0, err
		}
		if _, err := ix.db.ExecContext(ctx, `INSERT OR REPLACE INTO meta(key, value) VALUES('embed_model', ?)`, model); err != nil {
			return 0, err
		}
	}
	type pending struct {
		id   int64
		text string
	}
	rows, err := ix.db.QueryContext(ctx, `SELECT c.id, f.path, c.symbol, c.text FROM chunks c JOIN files f ON f.id=c.file_id WHERE c.vec IS NULL ORDER BY c.id`)
	if err != nil {
		return 0, err
	}
	var unembedded []pending
	for rows.Next() {
		var (
			p               pending
			path, sym, body string
		)
		if err := rows.Scan(&p.id, &path, &sym, &body); err != nil {
			rows.Close()
			return 0, err
		}
		p.text = embedText(path, sym, body)
		unembedded = append(unembedded, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	batch := ix.batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	done := 0
	for start := 0; start < len(unembedded); start += batch {
		end := min(start+batch, len(unembedded))
		texts := make([]string, 0, end-start)
		for _, p := range unembedded[start:end] {
			texts = append(texts, p.text)
		}
		vs, err := ix.embedder.Embed(ctx, texts)
		if err != nil {
			return done, err
		}
		if len(vs) != len(texts) {
			return done, fmt.Errorf("%w: %d vectors for %d texts", errBadVectors, len(vs), len(texts))
		}
		tx, err := ix.db.BeginTx(ctx, nil)
		if err != nil {
			return done, err
		}
		for i, p := range unembedded[start:end] {
			if _, err := tx.ExecContext(ctx, `UPDATE chunks SET vec=? WHERE id=?`, encodeVec(normalize(vs[i])), p.id); err != nil {
				tx.Rollback()
				return done, err
			}
		}
		if err := tx.Commit(); err != nil {
			return done, err
		}
		done += end - start
		report(Progress{Phase: "embed", Done: done, Total: len(unembedded)})
	}
	return done, nil
}
