package l3

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l1"
)

// Ledger seals one model call's efficiency receipt; *energy.Recorder
// implements it.
type Ledger interface {
	Seal(ctx context.Context, rec energy.Record) (store.Entry, *receipts.Efficiency, error)
}

// Stage is the L3 tier.
type Stage struct {
	Model    Model
	Key      ed25519.PrivateKey                                         // the endpoint key: author and signer of every op
	Snapshot func(ctx context.Context, root string) (core.Files, error) // nil reads the workspace from disk
	Check    *Checker                                                   // nil: the Go checks, no check command
	Timeout  time.Duration                                              // the whole attempt, repair included; 0 means 5 minutes

	// Energy prices each call's reported tokens: ModelBased where it holds
	// a calibration for the model, else Estimator by the model's class.
	Energy *energy.Table
	// Ledger, when set, seals a receipt for each model call. Leave it nil
	// when the calls go through joule proxy, which seals them itself.
	Ledger Ledger
	Grants func(ctx context.Context, session string) []string // the grant ids a call's receipt names and is charged to
	// Budget, with Ledger and Grants, makes each direct call pay its way:
	// before the call, its largest cost (the prompt's tokens plus
	// MaxOutput at the model's rates) is reserved against the grants, and
	// the reservation is settled to the reported usage when its receipt
	// is sealed. A grant that cannot pay refuses the call. *store.Store
	// implements it.
	Budget Budget
	// MaxOutput is the most tokens one call may produce, as the model
	// client caps them (Ollama.MaxOutput, OpenAI.MaxOutput); 0 means the
	// energy table's cap for the model's class.
	MaxOutput int
	// MaxContext bounds the workspace text put in the prompt, in bytes;
	// 0 means 64 KiB.
	MaxContext int
}

// Budget holds a call's largest cost in flight against grants.
type Budget interface {
	Reserve(ctx context.Context, grants []string, amountUJ uint64) (int64, error)
	Release(ctx context.Context, id int64) error
}

var _ tiers.Stage = (*Stage)(nil)

// Tier implements tiers.Stage.
func (s *Stage) Tier() core.Tier { return core.L3 }

// Miss is why the tier could not close a request after asking the model.
type Miss struct {
	Reason string
	Calls  int // model calls made
}

func (m *Miss) Error() string { return "l3: " + m.Reason }

// NoEdit is what the model answers when a request needs no change it can make.
const NoEdit = "NO_EDIT"

// TryResolve implements tiers.Stage. It asks the model for edit blocks,
// applies them to a copy of the tree and validates the result; on failure
// it feeds the errors back once. It closes with a signed op only when
// validation passes; otherwise it returns a *Miss (the model's edit did not
// hold), another error (the model could not be reached), or (nil, nil)
// when the model answered that it makes no edit.
func (s *Stage) TryResolve(ctx context.Context, req *tiers.Request) (*tiers.Resolution, error) {
	if s.Model == nil {
		return nil, errors.New("l3: no model configured")
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(WithSession(ctx, req.Session), timeout)
	defer cancel()
	snap := s.Snapshot
	if snap == nil {
		snap = func(_ context.Context, root string) (core.Files, error) { return core.ReadDir(root) }
	}
	files, err := snap(ctx, req.Root)
	if err != nil {
		return nil, err
	}
	msgs := []Message{{Role: "system", Content: systemPrompt}, {Role: "user", Content: userPrompt(req, files, s.maxContext())}}
	var (
		spent   []energy.Estimate
		tokens  energy.Usage
		unknown bool
	)
	// Round 0 is the edit, round 1 the one repair; every path of round 1 returns.
	for round := 0; ; round++ {
		reply, err := s.call(ctx, req.Session, round, msgs)
		if err != nil {
			if parent.Err() != nil {
				return nil, parent.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
				return nil, &Miss{Reason: fmt.Sprintf("the model did not finish within %s", timeout), Calls: round + 1}
			}
			return nil, err
		}
		est := s.Energy.Energy(reply.Model, reply.Usage)
		spent, tokens, unknown = append(spent, est), tokens.Add(reply.Usage), unknown || !reply.Reported
		next, changed, err := s.candidate(ctx, files, reply.Text)
		if errors.Is(err, errNoEdit) {
			return nil, nil
		}
		if err == nil {
			return s.close(req, files, next, changed, reply.Model, round, spent, tokens, unknown)
		}
		if parent.Err() != nil {
			return nil, parent.Err()
		}
		if ctx.Err() != nil {
			return nil, &Miss{Reason: fmt.Sprintf("validation did not finish within %s", timeout), Calls: round + 1}
		}
		var ve *ValidationError
		var pe *ParseError
		var ae *ApplyError
		if !errors.As(err, &ve) && !errors.As(err, &pe) && !errors.As(err, &ae) {
			return nil, &Miss{Reason: err.Error(), Calls: round + 1}
		}
		if round == 1 {
			return nil, &Miss{Reason: "the repaired edit failed too: " + err.Error(), Calls: 2}
		}
		msgs = append(msgs, Message{Role: "assistant", Content: reply.Text}, Message{Role: "user", Content: repairPrompt(err)})
	}
}

var errNoEdit = errors.New("the model proposed no edit")

// candidate parses, applies and validates one reply.
func (s *Stage) candidate(ctx context.Context, files core.Files, text string) (core.Files, []string, error) {
	blocks, err := Parse(text)
	if err != nil {
		return nil, nil, err
	}
	if len(blocks) == 0 {
		if strings.Contains(text, NoEdit) {
			return nil, nil, errNoEdit
		}
		return nil, nil, &ParseError{Line: 1, Msg: "the reply holds no edit block"}
	}
	next, err := Apply(files, blocks)
	if err != nil {
		return nil, nil, err
	}
	changed := changedPaths(files, next)
	chk := s.Check
	if chk == nil {
		chk = &Checker{}
	}
	if err := chk.Check(ctx, next, changed); err != nil {
		return nil, nil, err
	}
	return next, changedPaths(files, next), nil
}

func changedPaths(prior, next core.Files) []string {
	var ps []string
	for p, b := range next {
		if old, ok := prior[p]; !ok || string(old) != string(b) {
			ps = append(ps, p)
		}
	}
	sort.Strings(ps)
	return ps
}

// call makes one model call and, when a ledger is set, reserves its
// largest cost first and seals its receipt after.
func (s *Stage) call(ctx context.Context, session string, round int, msgs []Message) (*Reply, error) {
	if s.Ledger == nil {
		return s.Model.Chat(ctx, msgs)
	}
	var grants []string
	if s.Grants != nil {
		grants = s.Grants(ctx, session)
	}
	var reservation *int64
	if s.Budget != nil && len(grants) > 0 {
		maxUJ := s.maxCost(msgs)
		id, err := s.Budget.Reserve(ctx, grants, maxUJ)
		if err != nil {
			return nil, &Miss{Reason: fmt.Sprintf("the grant cannot pay for the model call (up to %s): %v", grant.FormatEnergy(maxUJ), err)}
		}
		reservation = &id
	}
	start := time.Now()
	reply, err := s.Model.Chat(ctx, msgs)
	rec := energy.Record{Session: session, Unit: "model-call", Model: s.Model.Name(), Coverage: receipts.CoverageLocal, Time: time.Now(),
		Grants: grants, Reservation: reservation}
	what := "edit"
	if round > 0 {
		what = "repair"
	}
	switch {
	case err != nil:
		rec.Estimate = s.Energy.Energy(rec.Model, energy.Usage{})
		rec.Note = fmt.Sprintf("L3 %s call failed after %s; its tokens are unknown", what, time.Since(start).Round(time.Millisecond))
	case !reply.Reported:
		rec.Model = reply.Model
		rec.Estimate = s.Energy.Energy(rec.Model, energy.Usage{})
		rec.Note = fmt.Sprintf("L3 %s call; the server reported no usage, so its tokens are unknown", what)
	default:
		rec.Model, rec.Usage, rec.Complete = reply.Model, reply.Usage, true
		rec.Estimate = s.Energy.Energy(rec.Model, reply.Usage)
		rec.Note = fmt.Sprintf("L3 %s call: tokens as the model server reported them; energy by %s", what, rec.Estimate.Basis)
	}
	rec.SettleUJ = rec.Estimate.UJ
	if _, _, serr := s.Ledger.Seal(context.WithoutCancel(ctx), rec); serr != nil {
		if reservation != nil {
			_ = s.Budget.Release(context.WithoutCancel(ctx), *reservation)
		}
		if err == nil {
			return nil, fmt.Errorf("l3: sealing the model call's receipt: %v", serr)
		}
	}
	return reply, err
}

// maxCost is the most a call with msgs may cost: its prompt at
// TokensAtMost, a few tokens more per message for the chat template, plus
// the output cap.
func (s *Stage) maxCost(msgs []Message) uint64 {
	var in uint64
	for _, m := range msgs {
		in += TokensAtMost(len(m.Content)) + 8
	}
	out := uint64(s.MaxOutput)
	if out == 0 {
		out = s.Energy.MaxOutput(s.Model.Name())
	}
	return s.Energy.Energy(s.Model.Name(), energy.Usage{Input: in, Output: out}).UJ
}

// TokensAtMost bounds the tokens a text of n bytes can make: a tokenizer
// with byte fallback (SentencePiece, byte-level BPE) never makes more
// tokens than bytes, though code usually takes a third to a quarter of
// that. A reservation holds the worst case: the bound before, one token per
// two bytes, was passed by a real Ollama whose model read the prompt byte by
// byte, and its calls then settled above what they had reserved.
func TokensAtMost(n int) uint64 { return uint64(max(n, 0)) }

func (s *Stage) close(req *tiers.Request, prior, next core.Files, changed []string, model string, round int, spent []energy.Estimate, tokens energy.Usage, unknown bool) (*tiers.Resolution, error) {
	pub := s.Key.Public().(ed25519.PublicKey)
	op, err := l1.NewOpWith(req.Sum, prior, next, core.PublicKey(pub), strings.TrimSpace(req.Prompt), core.L3)
	if errors.Is(err, l1.ErrNoChange) {
		return nil, &Miss{Reason: "the model's edit changes nothing once formatted", Calls: round + 1}
	}
	if err != nil {
		return nil, err
	}
	signed, err := core.SignOp(s.Key, op)
	if err != nil {
		return nil, err
	}
	checks := "validated by gofmt, go build and go vet"
	if !hasGo(changed) {
		checks = "validated by the check command"
	} else if s.Check != nil && len(s.Check.Command) > 0 {
		checks = "validated by gofmt, go build, go vet and the check command"
	}
	if round > 0 {
		checks += " after one repair round"
	}
	return &tiers.Resolution{Op: signed, Answer: fmt.Sprintf("L3 (%s) changed %s; %s. %s",
		model, strings.Join(changed, ", "), checks, energyNote(spent, tokens, unknown))}, nil
}

func hasGo(ps []string) bool {
	for _, p := range ps {
		if strings.HasSuffix(p, ".go") {
			return true
		}
	}
	return false
}

// energyNote says what the model calls cost, with the weakest provenance
// among them.
func energyNote(spent []energy.Estimate, tokens energy.Usage, unknown bool) string {
	var uj uint64
	prov, basis := core.ModelBased, ""
	for _, e := range spent {
		uj = energy.Cap(uj + e.UJ)
		if e.Provenance != core.ModelBased {
			prov = core.Estimator
		}
		basis = e.Basis
	}
	s := fmt.Sprintf("Model calls: %d, %d input (+%d cached), %d output tokens, ≈ %s (%s, %s).",
		len(spent), tokens.Input, tokens.CachedInput, tokens.Output, grant.FormatEnergy(uj), prov, basis)
	if unknown {
		s += " The server did not report usage for every call: the figure is a lower bound."
	}
	return s
}

func (s *Stage) maxContext() int {
	if s.MaxContext > 0 {
		return s.MaxContext
	}
	return 64 << 10
}
