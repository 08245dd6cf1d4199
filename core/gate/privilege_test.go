package gate

import "testing"

// TestPrivilegeWrappers checks that sudo, doas and su are actions of their
// own: a grant that allows the inner command but holds no rule for the
// wrapper denies it, and a rule that allows the wrapper lets it through.
func TestPrivilegeWrappers(t *testing.T) {
	f := newFixture(t, []string{"Bash(git status:*)", "Bash(touch:*)"}, nil, nil)
	withSudo := newFixture(t, []string{"Bash(git status:*)", "Bash(sudo:*)"}, nil, nil)
	cases := []struct {
		f    *fixture
		line string
		want string
	}{
		{f, "git status", Allow},
		{f, "sudo git status", Deny},
		{f, "sudo -u root git status", Deny},
		{f, "doas git status", Deny},
		{f, "su -c 'git status'", Deny},
		{f, "su root -c 'touch x'", Deny},
		{f, "timeout 5 git status", Allow}, // an ordinary wrapper
		{f, "nice -n 5 sudo git status", Deny},
		{f, "pkexec git status", Deny},
		{f, "runuser -u root -- git status", Deny},
		{f, "setpriv --reuid=0 git status", Deny},
		{f, "chroot / git status", Deny},
		{f, "unshare -r git status", Deny},
		{f, "sg root -c 'git status'", Deny},
		{withSudo, "sudo git status", Allow},
		{withSudo, "sudo touch x", Deny}, // the inner command is still judged
	}
	for _, c := range cases {
		v := Decide(c.f.event("Bash", map[string]any{"command": c.line}), c.f.policy)
		if v.Decision != c.want {
			t.Errorf("%q: %s/%s (%s), want %s", c.line, v.Decision, v.Code, v.Reason, c.want)
		}
	}
}
