package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"time"
)

// cappedBuffer keeps the first max bytes written to it and counts the rest,
// so a command that floods its output costs memory for max bytes only.
type cappedBuffer struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	total int64
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// commandResult is what run_command reports.
type commandResult struct {
	ExitCode    int    `json:"exit_code"`
	TimedOut    bool   `json:"timed_out"`
	Output      string `json:"output"`
	OutputBytes int64  `json:"output_bytes"`
	Truncated   bool   `json:"truncated"`
	DurationMS  int64  `json:"duration_ms"`
}

// runCommand runs line with bash in dir, stdin empty, stdout and stderr
// merged and capped, killing its whole process group at the time limit.
func runCommand(ctx context.Context, dir, line string, timeout time.Duration, maxOutput int) (commandResult, error) {
	shell, err := exec.LookPath("bash")
	if err != nil {
		return commandResult{}, errors.New("run_command needs bash on PATH")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, shell, "-c", line)
	cmd.Dir = dir
	out := &cappedBuffer{max: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	ownProcessGroup(cmd)
	// Children that keep the output pipe open must not hold the call past the limit.
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err = cmd.Run()
	res := commandResult{DurationMS: time.Since(start).Milliseconds()}
	out.mu.Lock()
	res.Output, res.OutputBytes = validUTF8(string(out.buf)), out.total
	res.Truncated = out.total > int64(len(out.buf))
	out.mu.Unlock()
	res.TimedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
	case res.TimedOut || errors.Is(err, exec.ErrWaitDelay):
		res.ExitCode = -1
	default:
		return res, fmt.Errorf("run_command: %w", err)
	}
	if res.TimedOut {
		res.ExitCode = -1
	}
	return res, nil
}
