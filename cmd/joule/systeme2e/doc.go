// Package systeme2e runs joule's system mode end to end, as root, on a
// machine of its own (hosttest.Machine: copy-on-write overlays of /etc,
// /run, /var/lib and /usr/local in a private mount namespace): joule
// install --system for real, people added with useradd, and the attacks
// system mode is meant to stop, each run as an unprivileged person.
package systeme2e
