package hosttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// StoreFailures runs, as subtests, the ways joule's own state fails under a
// host's hook: a store another process holds locked, a full disk (a tmpfs
// in the test's own mount namespace, so only where Main gave one), and a
// missing signing key. jhome is the working $JOULE_HOME; stop stops the
// resident gate of a home; deny asks the host's hook in a home and fails
// the test unless the answer is joule's deny.
func StoreFailures(t *testing.T, jhome string, stop func(jhome string), deny func(t *testing.T, jhome, why string)) {
	t.Run("locked store", func(t *testing.T) {
		stop(jhome)
		// The stopped gate may still be letting go of the file.
		release := LockStore(t, filepath.Join(jhome, "joule.db"))
		deny(t, jhome, "locked store")
		release()
		stop(jhome)
	})
	t.Run("full disk", func(t *testing.T) {
		if !NetNS {
			t.Skip("a full disk is simulated with a tmpfs in the test's own mount namespace (root and unshare -m)")
		}
		stop(jhome)
		full := filepath.Join(t.TempDir(), "full")
		os.MkdirAll(full, 0o700)
		if err := unix.Mount("tmpfs", full, "tmpfs", 0, "size=2m,mode=0700"); err != nil {
			t.Fatalf("mount tmpfs: %v", err)
		}
		t.Cleanup(func() { stop(full); unix.Unmount(full, unix.MNT_DETACH) })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "cp", "-a", jhome+"/.", full).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		// Fill it to the last block.
		filler, _ := os.Create(filepath.Join(full, "filler"))
		buf := make([]byte, 4096)
		for {
			if _, err := filler.Write(buf); err != nil {
				break
			}
		}
		filler.Close()
		deny(t, full, "full disk")
	})
	t.Run("missing key", func(t *testing.T) {
		stop(jhome)
		if err := os.Rename(filepath.Join(jhome, "steward.key"), filepath.Join(jhome, "steward.key.away")); err != nil {
			t.Fatal(err)
		}
		deny(t, jhome, "missing key")
		stop(jhome)
	})
}
