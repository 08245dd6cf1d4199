package server

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hook/resident"
)

// answerSystem is answer on a system gate: the request's own home, store
// and $HOME select nothing (the gate serves its one home, and a person's
// home is the one the password database gives the peer's uid); the
// request's op and the peer's credentials decide what may be done.
func (r *Gate) answerSystem(ctx context.Context, q *resident.Request, peer resident.Peer) *resident.Response {
	if why := r.changed(); why != "" {
		r.stale.Store(true)
		r.stop(why)
		return &resident.Response{Kind: resident.Stale}
	}
	sys := r.cfg.System
	admin := peer.UID == 0 || peer.GID == sys.AdminGID || slices.Contains(peer.Groups, sys.AdminGID)
	switch q.Op {
	case resident.OpStatus:
		return &resident.Response{Kind: resident.Answer, Stdout: []byte(r.status() + fmt.Sprintf("mode     system (you: uid %d, %s)\n", peer.UID, adminWord(admin)))}
	case resident.OpStop:
		if !admin {
			r.logf("refused 'joule gate stop' from uid %d (pid %d): not root nor of the admin group", peer.UID, peer.PID)
			return &resident.Response{Kind: resident.Answer, Exit: 1, Stderr: []byte("joule: only root or a member of the admin group may stop the system gate\n")}
		}
		defer r.stop(fmt.Sprintf("stopped by 'joule gate stop' (uid %d)", peer.UID))
		return &resident.Response{Kind: resident.Answer, Stdout: fmt.Appendf(nil, "stopped the joule system gate (pid %d) on %s\n", os.Getpid(), r.sock)}
	case resident.OpAdmin:
		if sys.Admin == nil {
			return &resident.Response{Kind: resident.Answer, Exit: 2, Stderr: []byte("joule: this gate runs no admin requests\n")}
		}
		args := splitArgs(q.Payload)
		resp := sys.Admin(ctx, args, q.Cwd, peer, admin)
		r.logf("admin request from uid %d (pid %d, %s): %q: exit %d", peer.UID, peer.PID, adminWord(admin), args, resp.Exit)
		return resp
	case resident.OpHook:
	default:
		return &resident.Response{Kind: resident.Answer, Exit: 2, Stderr: fmt.Appendf(nil, "joule gate: unknown request %q\n", q.Op)}
	}
	if q.ExecEnv != r.cfg.ExecEnv {
		return &resident.Response{Kind: resident.Mismatch}
	}
	a, ok := r.cfg.Adapter(q.Host, q.Cwd)
	if !ok {
		return &resident.Response{Kind: resident.Answer, Exit: 2,
			Stderr: fmt.Appendf(nil, "joule: hook: unknown host %q (hosts: %s)\n", q.Host, r.cfg.Hosts)}
	}
	pg, err := r.peerGate(peer.UID)
	if err != nil {
		out := hook.Fallback(a, nil, hook.Deny(gate.CodeInternal, fmt.Sprintf("the system gate cannot decide for uid %d: %v", peer.UID, err)))
		return &resident.Response{Kind: resident.Answer, Exit: out.Exit, Stdout: out.Stdout, Stderr: []byte(out.Stderr)}
	}
	return r.decideHook(ctx, q, a, pg.Gate, pg.Contain)
}

func adminWord(admin bool) string {
	if admin {
		return "an administrator"
	}
	return "not an administrator"
}

// peerGate is the gate of uid's hooks, made once a minute.
func (r *Gate) peerGate(uid int) (*PeerGate, error) {
	if v, ok := r.peers.Load(uid); ok {
		e := v.(peerGateEntry)
		if time.Since(e.at) < peerGateTTL {
			return e.pg, e.err
		}
	}
	pg, err := r.cfg.System.For(r.g, uid)
	if err == nil && (pg == nil || pg.Gate == nil) {
		err = fmt.Errorf("no gate for uid %d", uid)
	}
	r.peers.Store(uid, peerGateEntry{pg: pg, err: err, at: time.Now()})
	return pg, err
}

func (r *Gate) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Log, "%s joule gate[%d]: %s\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), fmt.Sprintf(format, args...))
}

// JoinArgs and splitArgs carry a command's arguments in an admin request's
// payload.
func JoinArgs(args []string) []byte {
	var b bytes.Buffer
	for i, a := range args {
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(a)
	}
	return b.Bytes()
}

func splitArgs(p []byte) []string {
	if len(p) == 0 {
		return nil
	}
	var out []string
	for _, a := range bytes.Split(p, []byte{0}) {
		out = append(out, string(a))
	}
	return out
}
