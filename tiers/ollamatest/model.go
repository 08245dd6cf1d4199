// Package ollamatest runs a real Ollama server for tests, offline: the
// ollama binary that .ci/setup.d/35-ollama.sh builds from source, serving
// tiny llama-architecture models that WriteModel writes in milliseconds.
// L3's and L2's end-to-end tests (and joule doctor's) talk to it through the
// same clients users run.
package ollamatest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
)

// Spec describes a tiny model. Its weights are random but for the output
// matrix: the output row of each token is the (scaled) embedding of the
// token that is to precede it, and the attention and feed-forward blocks add
// only a little to the residual stream, so at temperature 0 the model reads
// its last input token and answers with a fixed chain of tokens. That chain
// is Reply, one token per piece, then the noise words (printable words of
// a small vocabulary, in an order the seed decides), then the end of the
// sequence (or, Endless, the words again, forever). Every prompt ollama
// renders for it ends with the same token, <|assistant|>, so every chat and
// generate call answers the same text; num_predict cuts it short.
type Spec struct {
	Seed uint64
	// Reply is what the model says first, each piece a token of its own
	// (so no piece may repeat, nor be one of the vocabulary's words).
	Reply []string
	// Words is how many noise words follow Reply before the end of the
	// sequence; 0 and no Reply means every word of the vocabulary.
	Words int
	// Endless makes the noise words cycle instead of ending: the reply
	// ends only at num_predict (for a stream killed midway).
	Endless bool
	// Embedding makes it an embedding model (mean pooling): ollama serves
	// it on /api/embed and refuses it chats.
	Embedding bool
	// Context is the context length the model declares; 0 is 8192.
	Context int
}

// Shape of every model WriteModel writes.
const (
	Layers    = 2
	Embed     = 64 // the embedding length, and the dimension of an embedding model's vectors
	heads     = 4
	headsKV   = 2
	ffn       = 128
	rmsEps    = 1e-5
	outScale  = 4   // how sharply the output rows pick the next token
	mixScale  = .02 // the attention and feed-forward outputs' weights, against 1/sqrt(Embed) for the others
	ctxLength = 8192
)

// Token types, as llama.cpp numbers them (tokenizer.ggml.token_type).
const (
	tokNormal      = 1
	tokUnknown     = 2
	tokControl     = 3
	tokUserDefined = 4
	tokByte        = 6
)

// The special tokens. The chat template (Template) wraps each message in a
// role token and ends with Assistant; llama.cpp matches user-defined tokens
// whole in a prompt.
const (
	Unknown   = "<unk>"
	BOS       = "<s>"
	EOS       = "</s>"
	System    = "<|system|>"
	User      = "<|user|>"
	Assistant = "<|assistant|>"
)

// Template is the chat template for a Modelfile: every rendered prompt ends
// with Assistant, the token the reply chain starts from.
const Template = `{{- range .Messages }}<|{{ .Role }}|>{{ .Content }}
{{ end }}<|assistant|>`

// words is the vocabulary beyond bytes: Go and English, a few hundred.
var words = strings.Fields(`
func return package import if else for range var const type struct interface map chan go defer select case default
switch break continue fallthrough goto nil true false error string int int64 uint64 byte rune float64 bool any len cap
make new append copy delete panic recover print println close err ok ctx context fmt errors os io strings bytes time
sync http json path file files dir read write open test tests want got name value key keys index count size buf data
line lines text word words the a an and or not of to in on at by with from into over under is are was were be been being
has have had do does did will would can could should may might must this that these those it its they them their we our
you your he she his her one two three four five six seven eight nine ten first last next prev old left right up down top
bottom start end begin done closed yes no all some none each every many few more most less least other same different
model server client request response call calls tier tiers cache store grant receipt energy token tokens budget joule
edit edits block blocks patch diff apply check build vet format source code function method field fields packages module
version config option options flag flags argument arguments result results returns values number numbers list lists
slice slices array arrays pointer pointers channel channels goroutine goroutines mutex lock unlock wait group signal
kill process processes thread threads memory disk network socket port host address url query search find match sort
order filter reduce sum min max average total part parts piece pieces chunk chunks vector vectors embed embedding score
rank ranks hit hits miss misses fallback timeout deadline retry fail fails failed pass passes passed hello world foo bar
baz qux alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omega red green blue black white small large
short long fast slow hot cold early late quick lazy brown fox jumps dog cat bird fish tree leaf root
`)

// vocab is a model's token list with types and scores.
type vocab struct {
	tokens []string
	types  []int32
	scores []float32
	id     map[string]int
}

func (v *vocab) add(text string, typ int32, score float32) (int, error) {
	if _, dup := v.id[text]; dup {
		return 0, fmt.Errorf("ollamatest: the token %q is in the vocabulary twice (llama.cpp refuses such a model)", text)
	}
	v.id[text] = len(v.tokens)
	v.tokens = append(v.tokens, text)
	v.types = append(v.types, typ)
	v.scores = append(v.scores, score)
	return len(v.tokens) - 1, nil
}

// build lays out the vocabulary: unknown, BOS, EOS, the 256 byte tokens
// (SentencePiece's byte fallback: any text tokenizes), the role tokens,
// the space, the words (▁word, as SentencePiece spells a word after a space), then
// Reply's pieces. It returns the vocabulary and the reply chain's word ids.
func (s Spec) build() (*vocab, []int, []int, error) {
	v := &vocab{id: map[string]int{}}
	for _, t := range []struct {
		text string
		typ  int32
	}{{Unknown, tokUnknown}, {BOS, tokControl}, {EOS, tokControl}} {
		if _, err := v.add(t.text, t.typ, 0); err != nil {
			return nil, nil, nil, err
		}
	}
	for b := 0; b < 256; b++ {
		if _, err := v.add(fmt.Sprintf("<0x%02X>", b), tokByte, 0); err != nil {
			return nil, nil, nil, err
		}
	}
	for _, r := range []string{System, User, Assistant} {
		if _, err := v.add(r, tokUserDefined, 0); err != nil {
			return nil, nil, nil, err
		}
	}
	// The space, as SentencePiece escapes it: without it each space would
	// fall back to the three bytes of ▁ (U+2581), and a prompt would make
	// more tokens than it has bytes, which no real vocabulary does.
	if _, err := v.add("▁", tokNormal, 0); err != nil {
		return nil, nil, nil, err
	}
	var wordIDs []int
	for i, w := range words {
		id, err := v.add("▁"+w, tokNormal, -float32(i+1))
		if err != nil {
			return nil, nil, nil, err
		}
		wordIDs = append(wordIDs, id)
	}
	var replyIDs []int
	for i, p := range s.Reply {
		if p == "" {
			return nil, nil, nil, fmt.Errorf("ollamatest: Reply[%d] is empty", i)
		}
		id, err := v.add(p, tokNormal, -float32(len(words)+i+1))
		if err != nil {
			return nil, nil, nil, err
		}
		replyIDs = append(replyIDs, id)
	}
	return v, wordIDs, replyIDs, nil
}

// chain is the successor of each token: what the model answers after it.
func (s Spec) chain(v *vocab, wordIDs, replyIDs []int, rng *rand.Rand) (map[int]int, error) {
	n := s.Words
	if n == 0 && len(s.Reply) == 0 {
		n = len(wordIDs)
	}
	if n < 0 || n > len(wordIDs) {
		return nil, fmt.Errorf("ollamatest: Words is %d, want 0 to %d", n, len(wordIDs))
	}
	if s.Endless && n == 0 {
		return nil, errors.New("ollamatest: an Endless model needs noise words to cycle")
	}
	order := rng.Perm(len(wordIDs))
	seq := append([]int(nil), replyIDs...)
	for _, i := range order[:n] {
		seq = append(seq, wordIDs[i])
	}
	next := map[int]int{}
	prev := v.id[Assistant]
	for _, id := range seq {
		next[prev] = id
		prev = id
	}
	switch {
	case s.Endless:
		next[prev] = seq[len(replyIDs)] // back to the first noise word
	default:
		next[prev] = v.id[EOS]
	}
	return next, nil
}

// WriteModel writes the model s describes to path as GGUF, with ollama's
// own writer. The same Spec writes the same bytes.
func WriteModel(path string, s Spec) error {
	v, wordIDs, replyIDs, err := s.build()
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x6a6f756c65)) // "joule"
	next, err := s.chain(v, wordIDs, replyIDs, rng)
	if err != nil {
		return err
	}
	ctx := s.Context
	if ctx == 0 {
		ctx = ctxLength
	}
	nv := len(v.tokens)
	normal := func(n int, scale float64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.NormFloat64() * scale)
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	// token_embd: row t (Embed values, contiguous) is token t's embedding,
	// of RMS 1 so that llama's RMS norm leaves it about as it is.
	embd := normal(nv*Embed, 1)
	// output: row t is the embedding of t's predecessor in the chain, so
	// the logit of t is large exactly when the last token is that
	// predecessor; a token that follows nothing gets a zero row.
	out := make([]float32, nv*Embed)
	for prev, t := range next {
		for i := 0; i < Embed; i++ {
			out[t*Embed+i] += embd[prev*Embed+i] * outScale / Embed
		}
	}
	f32 := func(name string, data []float32, shape ...uint64) *ggml.Tensor {
		b := make([]byte, 4*len(data))
		for i, x := range data {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return &ggml.Tensor{Name: name, Kind: uint32(ggml.TensorTypeF32), Shape: shape, WriterTo: bytes.NewReader(b)}
	}
	std := 1 / math.Sqrt(Embed)
	headDim := Embed / heads
	ts := []*ggml.Tensor{
		f32("token_embd.weight", embd, Embed, uint64(nv)),
		f32("output_norm.weight", ones(Embed), Embed),
		f32("output.weight", out, Embed, uint64(nv)),
	}
	for l := range Layers {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			f32(p+"attn_norm.weight", ones(Embed), Embed),
			f32(p+"attn_q.weight", normal(Embed*Embed, std), Embed, Embed),
			f32(p+"attn_k.weight", normal(Embed*headsKV*headDim, std), Embed, uint64(headsKV*headDim)),
			f32(p+"attn_v.weight", normal(Embed*headsKV*headDim, std), Embed, uint64(headsKV*headDim)),
			f32(p+"attn_output.weight", normal(Embed*Embed, std*mixScale), Embed, Embed),
			f32(p+"ffn_norm.weight", ones(Embed), Embed),
			f32(p+"ffn_gate.weight", normal(Embed*ffn, std), Embed, ffn),
			f32(p+"ffn_up.weight", normal(Embed*ffn, std), Embed, ffn),
			f32(p+"ffn_down.weight", normal(ffn*Embed, mixScale/math.Sqrt(ffn)), ffn, Embed),
		)
	}
	kv := ggml.KV{
		"general.architecture":                   "llama",
		"general.name":                           "joule-tiny",
		"general.file_type":                      uint32(0), // all F32
		"llama.context_length":                   uint32(ctx),
		"llama.embedding_length":                 uint32(Embed),
		"llama.block_count":                      uint32(Layers),
		"llama.feed_forward_length":              uint32(ffn),
		"llama.attention.head_count":             uint32(heads),
		"llama.attention.head_count_kv":          uint32(headsKV),
		"llama.attention.layer_norm_rms_epsilon": float32(rmsEps),
		"llama.rope.dimension_count":             uint32(headDim),
		"llama.rope.freq_base":                   float32(10000),
		"llama.vocab_size":                       uint32(nv),
		"tokenizer.ggml.model":                   "llama",
		"tokenizer.ggml.tokens":                  v.tokens,
		"tokenizer.ggml.token_type":              v.types,
		"tokenizer.ggml.scores":                  v.scores,
		"tokenizer.ggml.unknown_token_id":        uint32(v.id[Unknown]),
		"tokenizer.ggml.bos_token_id":            uint32(v.id[BOS]),
		"tokenizer.ggml.eos_token_id":            uint32(v.id[EOS]),
		"tokenizer.ggml.add_bos_token":           true,
		"tokenizer.ggml.add_eos_token":           false,
	}
	if s.Embedding {
		kv["llama.pooling_type"] = uint32(1) // mean
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := ggml.WriteGGUF(f, kv, ts); err != nil {
		f.Close()
		return fmt.Errorf("ollamatest: writing %s: %w", path, err)
	}
	return f.Close()
}

// ReplyText is the text the model answers with when nothing cuts it short
// (an Endless model's, up to its first cycle): Reply, then the noise words
// each after a space, as SentencePiece decodes them.
func ReplyText(s Spec) (string, error) {
	v, wordIDs, replyIDs, err := s.build()
	if err != nil {
		return "", err
	}
	next, err := s.chain(v, wordIDs, replyIDs, rand.New(rand.NewPCG(s.Seed, 0x6a6f756c65)))
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	seen := map[int]bool{}
	for t := next[v.id[Assistant]]; t != v.id[EOS] && !seen[t]; t = next[t] {
		seen[t] = true
		sb.WriteString(strings.ReplaceAll(v.tokens[t], "▁", " "))
	}
	return sb.String(), nil
}
