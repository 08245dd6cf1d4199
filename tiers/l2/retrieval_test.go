package l2

import (
	"context"
	"testing"
)

// defCase is a definition lookup with its ground truth.
type defCase struct {
	name string
	path string
	line int
}

var defCases = []defCase{
	{"ComputeTotal", "billing/invoice.go", 25},
	{"billing.ComputeTotal", "billing/invoice.go", 25},
	{"applyDiscount", "billing/discount.go", 18},
	{"Coupon", "billing/discount.go", 6},
	{"Coupon.Valid", "billing/discount.go", 13},
	{"TaxRate", "billing/invoice.go", 11},
	{"ParseSKU", "inventory/sku.go", 13},
	{"inventory.Validate", "inventory/sku.go", 27},
	{"billing.Validate", "billing/invoice.go", 38},
	{"(*Stock).Reserve", "inventory/stock.go", 29},
	{"Stock.Release", "inventory/stock.go", 41},
	{"inventory.Stock", "inventory/stock.go", 16},
	{"ErrOutOfStock", "inventory/stock.go", 13},
	{"NewStock", "inventory/stock.go", 23},
	{"checkToken", "server/auth.go", 10},
	{"(*Server).ServeHTTP", "server/http.go", 29},
	{"server.New", "server/http.go", 19},
	{"load_orders", "scripts/report.py", 7},
	{"ReportBuilder", "scripts/report.py", 13},
	{"render_csv", "scripts/report.py", 26},
}

// searchCase is a free-text query and the chunk that answers it.
type searchCase struct {
	query string
	path  string
	line  int // a line the answering chunk must cover
}

var searchCases = []searchCase{
	{"reserve units of stock for an order", "inventory/stock.go", 29},
	{"sum the invoice lines with sales tax", "billing/invoice.go", 25},
	{"compare the bearer token in constant time", "server/auth.go", 10},
	{"write the revenue table as CSV", "scripts/report.py", 26},
	{"how do I build and run the server", "docs/README.md", 6},
	{"take the coupon percentage off the subtotal", "billing/discount.go", 18},
	{"reject a malformed stock keeping unit code", "inventory/sku.go", 13},
	{"return reserved units when an order is cancelled", "inventory/stock.go", 41},
	{"read JSON orders from the order log", "scripts/report.py", 7},
	{"HTTP checkout handler", "server/http.go", 29},
}

func covers(h Hit, path string, line int) bool {
	return h.Path == path && h.StartLine <= line && line <= h.EndLine
}

func TestDefinitionRecallAt5(t *testing.T) {
	ix := openTest(t, corpus)
	ctx := context.Background()
	if _, err := ix.Update(ctx, nil); err != nil {
		t.Fatal(err)
	}
	found, foundSearch := 0, 0
	for _, c := range defCases {
		defs, err := ix.Definitions(ctx, c.name)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ok := false
		for i, d := range defs {
			if i < 5 && d.Path == c.path && d.Line == c.line {
				ok = true
			}
		}
		if ok {
			found++
		} else {
			t.Errorf("Definitions(%q) = %v, want %s:%d in the top 5", c.name, locs(defs), c.path, c.line)
		}
		hits, err := ix.Search(ctx, c.name, 5)
		if err != nil {
			t.Fatalf("Search(%q): %v", c.name, err)
		}
		for _, h := range hits {
			if covers(h, c.path, c.line) {
				foundSearch++
				break
			}
		}
	}
	recall := float64(found) / float64(len(defCases))
	searchRecall := float64(foundSearch) / float64(len(defCases))
	t.Logf("definition recall@5: symbol table %.2f, search %.2f", recall, searchRecall)
	if recall < 1 {
		t.Errorf("symbol-table recall@5 = %.2f, want 1", recall)
	}
	if searchRecall < 0.9 {
		t.Errorf("search recall@5 on definition names = %.2f, want ≥ 0.9", searchRecall)
	}
}

func locs(hs []Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Path+":"+itoa(h.Line))
	}
	return out
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// mrr is the mean reciprocal rank of the answering chunk in the top 10.
func mrr(t *testing.T, ix *Index) float64 {
	t.Helper()
	var sum float64
	for _, c := range searchCases {
		hits, err := ix.Search(context.Background(), c.query, 10)
		if err != nil {
			t.Fatalf("%q: %v", c.query, err)
		}
		rank := 0
		for i, h := range hits {
			if covers(h, c.path, c.line) {
				rank = i + 1
				break
			}
		}
		if rank == 0 {
			t.Logf("%q: answer not in the top 10", c.query)
		} else {
			sum += 1 / float64(rank)
			if rank > 1 {
				t.Logf("%q: answer at rank %d (top: %s:%d)", c.query, rank, hits[0].Path, hits[0].StartLine)
			}
		}
	}
	return sum / float64(len(searchCases))
}

func TestFreeTextMRR(t *testing.T) {
	ctx := context.Background()
	lexical := openTest(t, corpus)
	if _, err := lexical.Update(ctx, nil); err != nil {
		t.Fatal(err)
	}
	srv := newFakeEmbedServer(t)
	hybrid := openTest(t, corpus, WithEmbedder(NewOllamaEmbedder(srv.URL, "nomic-embed-text", nil)))
	if st, err := hybrid.Update(ctx, nil); err != nil || st.EmbedErr != nil {
		t.Fatal(err, st.EmbedErr)
	}
	lex, hyb := mrr(t, lexical), mrr(t, hybrid)
	t.Logf("free-text MRR@10: lexical %.3f, hybrid (bag-of-words test vectors) %.3f", lex, hyb)
	if lex < 0.75 {
		t.Errorf("lexical MRR = %.3f, want ≥ 0.75", lex)
	}
	// The test vectors are hashed bags of words, a weak second opinion:
	// the bar is that fusing them in does not wreck the ranking.
	if hyb < 0.65 {
		t.Errorf("hybrid MRR = %.3f, want ≥ 0.65", hyb)
	}
	// Lexical-only hits say so; hybrid ones do not.
	h1, _ := lexical.Search(ctx, "bearer token", 1)
	h2, _ := hybrid.Search(ctx, "bearer token", 1)
	if len(h1) != 1 || h1[0].Why != "bm25; "+LexicalOnly {
		t.Errorf("lexical hit Why = %+v", h1)
	}
	if len(h2) != 1 || h2[0].Why != "bm25+vector" {
		t.Errorf("hybrid hit Why = %+v", h2)
	}
}

func TestSearchErrors(t *testing.T) {
	ix := openTest(t, corpus)
	ctx := context.Background()
	if _, err := ix.Update(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(ctx, "the of and", 5); err != ErrEmptyQuery {
		t.Errorf("stopwords only: err = %v, want ErrEmptyQuery", err)
	}
	if _, err := ix.Search(ctx, "tax", 0); err == nil {
		t.Error("k = 0 accepted")
	}
	if hits, err := ix.Search(ctx, `"quoted" OR NEAR(x) *`, 5); err != nil {
		t.Errorf("FTS syntax in a query must be inert, got %v (%d hits)", err, len(hits))
	}
	if _, err := ix.Definitions(ctx, "not a name"); err == nil {
		t.Error("Definitions accepted a non-name")
	}
}

func TestCallers(t *testing.T) {
	ix := openTest(t, corpus)
	ctx := context.Background()
	if _, err := ix.Update(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		want []string // path:line of each use
	}{
		{"ParseSKU", []string{"billing/invoice.go:28", "inventory/sku.go:29", "server/http.go:44"}},
		{"ComputeTotal", []string{"server/http.go:54"}},
		{"applyDiscount", []string{"billing/invoice.go:33"}},
		{"checkToken", []string{"server/http.go:30"}},
		{"server.New", []string{"cmd/shop/main.go:16"}},
		{"billing.Validate", []string{"server/http.go:39"}},
		// A method: every call of a method named Reserve.
		{"(*Stock).Reserve", []string{"server/http.go:49"}},
		{"NoSuchName", nil},
	} {
		hits, err := ix.Callers(ctx, tt.name)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := locs(hits)
		if len(got) != len(tt.want) {
			t.Errorf("Callers(%q) = %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("Callers(%q) = %v, want %v", tt.name, got, tt.want)
				break
			}
		}
	}
}
