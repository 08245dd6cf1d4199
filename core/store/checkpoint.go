package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is the body of a C2SP tlog-checkpoint
// (https://c2sp.org/tlog-checkpoint): the log's origin, its size and its
// root hash, then optional extension lines. Signed, it is a signed note.
type Checkpoint struct {
	Origin     string
	Size       int64
	Root       tlog.Hash
	Extensions []string
}

// Text returns the checkpoint body: one line each for origin, decimal size,
// base64 root hash and every extension.
func (c Checkpoint) Text() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
	for _, e := range c.Extensions {
		b.WriteString(e)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ParseCheckpoint parses a checkpoint body, such as the Text of a note
// returned by note.Open. Only the canonical encoding is accepted, so
// Text of the result gives back the input byte for byte.
func ParseCheckpoint(text []byte) (Checkpoint, error) {
	body, ok := bytes.CutSuffix(text, []byte("\n"))
	if !ok {
		return Checkpoint{}, fmt.Errorf("checkpoint %q does not end in a newline", clip(text))
	}
	lines := strings.Split(string(body), "\n")
	if len(lines) < 3 {
		return Checkpoint{}, fmt.Errorf("checkpoint %q has %d lines, want at least 3", clip(text), len(lines))
	}
	if err := checkLine("origin", lines[0]); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	c := Checkpoint{Origin: lines[0]}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return Checkpoint{}, fmt.Errorf("checkpoint size %q is not a canonical decimal tree size", clip([]byte(lines[1])))
	}
	c.Size = size
	root, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize || base64.StdEncoding.EncodeToString(root) != lines[2] {
		return Checkpoint{}, fmt.Errorf("checkpoint root %q is not a canonical base64 32-byte hash", clip([]byte(lines[2])))
	}
	copy(c.Root[:], root)
	for _, e := range lines[3:] {
		if err := checkLine("extension line", e); err != nil {
			return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
		}
		c.Extensions = append(c.Extensions, e)
	}
	return c, nil
}

// checkLine validates one line of a checkpoint body.
func checkLine(what, line string) error {
	switch {
	case line == "":
		return fmt.Errorf("empty %s", what)
	case !utf8.ValidString(line):
		return fmt.Errorf("%s %q is not valid UTF-8", what, clip([]byte(line)))
	case strings.IndexFunc(line, unicode.IsControl) >= 0:
		return fmt.Errorf("%s %q contains a control character", what, clip([]byte(line)))
	}
	return nil
}

// clip shortens untrusted input quoted in an error.
func clip(b []byte) string {
	const limit = 64
	if len(b) > limit {
		return string(b[:limit]) + "..."
	}
	return string(b)
}

// Checkpoint signs the log's current size and root hash as a C2SP checkpoint
// for origin (a signed note), stores it and returns the note. signer runs
// while the store holds the write lock, so it must be quick.
func (s *Store) Checkpoint(ctx context.Context, origin string, signer note.Signer) ([]byte, error) {
	if err := checkLine("origin", origin); err != nil {
		return nil, fmt.Errorf("store: checkpoint: %w", err)
	}
	if signer == nil {
		return nil, errors.New("store: checkpoint: nil signer")
	}
	var signed []byte
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		// On PostgreSQL, checkpoints are ordered with the appends, so a
		// later checkpoint never has a smaller size.
		if err := lockLog(ctx, tx); err != nil {
			return err
		}
		size, err := logSize(ctx, tx)
		if err != nil {
			return err
		}
		root, err := tlog.TreeHash(size, hashReader{ctx, tx})
		if err != nil {
			return err
		}
		c := Checkpoint{Origin: origin, Size: size, Root: root}
		msg, err := note.Sign(&note.Note{Text: string(c.Text())}, signer)
		if err != nil {
			return fmt.Errorf("sign as %q: %w", signer.Name(), err)
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO checkpoints (size, root, note, created_ns) VALUES (?, ?, ?, ?)`,
			size, root[:], msg, unixNano(s.now())); err != nil {
			return err
		}
		signed = msg
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: checkpoint %q: %w", origin, err)
	}
	return signed, nil
}

// LatestCheckpoint returns the last signed checkpoint Checkpoint stored, or
// an error wrapping ErrNotFound if there is none.
func (s *Store) LatestCheckpoint(ctx context.Context) ([]byte, error) {
	var msg []byte
	err := s.conn().QueryRowContext(ctx, `SELECT note FROM checkpoints ORDER BY id DESC LIMIT 1`).Scan(&msg)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: latest checkpoint: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: latest checkpoint: %w", s.classify(err))
	}
	return msg, nil
}
