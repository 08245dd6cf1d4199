package command

import (
	"strings"
)

// withNo adds the --no-NAME form of every long option that takes no value,
// as curl and rsync accept.
func withNo(names ...string) []string {
	out := append([]string(nil), names...)
	for _, n := range names {
		if !strings.HasSuffix(n, "=") && !strings.HasSuffix(n, "?") && !strings.HasPrefix(n, "no-") {
			out = append(out, "no-"+n)
		}
	}
	return out
}

// curlModel is curl's (curl --help all, curl 7.88): downloads (-o, -O,
// --output-dir), cookie jars, traces and header dumps are writes; uploads,
// certificates and @file values are reads; -K reads options from a file
// the gate does not read, --engine loads a shared library. A file: URL
// reads the file it names.
func curlModel() *model {
	m := &model{opts: spec("aE:K:C:b:c:d:qD:fF:P:GgIH:h0ik46jlLMm:n:No:Z#x:U:pQ:r:e:JORX:SsY:y:23t:z:1T:Bu:A:vVw:",
		withNo("abstract-unix-socket=", "alt-svc=", "anyauth", "append", "aws-sigv4=", "basic", "cacert=", "capath=",
			"cert=", "cert-status", "cert-type=", "ciphers=", "compressed", "compressed-ssh", "config=",
			"connect-timeout=", "connect-to=", "continue-at=", "cookie=", "cookie-jar=", "create-dirs",
			"create-file-mode=", "crlf", "crlfile=", "curves=", "data=", "data-ascii=", "data-binary=", "data-raw=",
			"data-urlencode=", "delegation=", "digest", "disable", "disable-eprt", "disable-epsv",
			"disallow-username-in-url", "dns-interface=", "dns-ipv4-addr=", "dns-ipv6-addr=", "dns-servers=",
			"doh-cert-status", "doh-insecure", "doh-url=", "dump-header=", "egd-file=", "engine=", "etag-compare=",
			"etag-save=", "expect100-timeout=", "fail", "fail-early", "fail-with-body", "false-start", "form=",
			"form-escape", "form-string=", "ftp-account=", "ftp-alternative-to-user=", "ftp-create-dirs",
			"ftp-method=", "ftp-pasv", "ftp-port=", "ftp-pret", "ftp-skip-pasv-ip", "ftp-ssl-ccc",
			"ftp-ssl-ccc-mode=", "ftp-ssl-control", "get", "globoff", "happy-eyeballs-timeout-ms=",
			"haproxy-protocol", "head", "header=", "help", "hostpubmd5=", "hostpubsha256=", "hsts=", "http0.9",
			"http1.0", "http1.1", "http2", "http2-prior-knowledge", "http3", "http3-only", "ignore-content-length",
			"include", "insecure", "interface=", "ipv4", "ipv6", "json=", "junk-session-cookies", "keepalive-time=",
			"key=", "key-type=", "krb=", "libcurl=", "limit-rate=", "list-only", "local-port=", "location",
			"location-trusted", "login-options=", "mail-auth=", "mail-from=", "mail-rcpt=", "mail-rcpt-allowfails",
			"manual", "max-filesize=", "max-redirs=", "max-time=", "metalink", "negotiate", "netrc", "netrc-file=",
			"netrc-optional", "next", "alpn", "buffer", "clobber", "keepalive", "npn", "progress-meter", "sessionid",
			"noproxy=", "ntlm", "ntlm-wb", "oauth2-bearer=", "output=", "output-dir=", "parallel",
			"parallel-immediate", "parallel-max=", "pass=", "path-as-is", "pinnedpubkey=", "post301", "post302",
			"post303", "preproxy=", "progress-bar", "proto=", "proto-default=", "proto-redir=", "proxy=",
			"proxy-anyauth", "proxy-basic", "proxy-cacert=", "proxy-capath=", "proxy-cert=", "proxy-cert-type=",
			"proxy-ciphers=", "proxy-crlfile=", "proxy-digest", "proxy-header=", "proxy-insecure", "proxy-key=",
			"proxy-key-type=", "proxy-negotiate", "proxy-ntlm", "proxy-pass=", "proxy-pinnedpubkey=",
			"proxy-service-name=", "proxy-ssl-allow-beast", "proxy-ssl-auto-client-cert", "proxy-tls13-ciphers=",
			"proxy-tlsauthtype=", "proxy-tlspassword=", "proxy-tlsuser=", "proxy-tlsv1", "proxy-user=",
			"proxy1.0=", "proxytunnel", "pubkey=", "quote=", "random-file=", "range=", "rate=", "raw", "referer=",
			"remote-header-name", "remote-name", "remote-name-all", "remote-time", "remove-on-error", "request=",
			"request-target=", "resolve=", "retry=", "retry-all-errors", "retry-connrefused", "retry-delay=",
			"retry-max-time=", "sasl-authzid=", "sasl-ir", "service-name=", "show-error", "silent", "socks4=",
			"socks4a=", "socks5=", "socks5-basic", "socks5-gssapi", "socks5-gssapi-nec", "socks5-gssapi-service=",
			"socks5-hostname=", "speed-limit=", "speed-time=", "ssl", "ssl-allow-beast", "ssl-auto-client-cert",
			"ssl-no-revoke", "ssl-reqd", "ssl-revoke-best-effort", "sslv2", "sslv3", "stderr=", "styled-output",
			"suppress-connect-headers", "tcp-fastopen", "tcp-nodelay", "telnet-option=", "tftp-blksize=",
			"tftp-no-options", "time-cond=", "tls-max=", "tls13-ciphers=", "tlsauthtype=", "tlspassword=",
			"tlsuser=", "tlsv1", "tlsv1.0", "tlsv1.1", "tlsv1.2", "tlsv1.3", "tr-encoding", "trace=", "trace-ascii=",
			"trace-time", "unix-socket=", "upload-file=", "url=", "url-query=", "use-ascii", "user=", "user-agent=",
			"verbose", "version", "write-out=", "xattr")...).permuting(),
		values: merge(
			on(writesFile, "-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header", "--etag-save", "--libcurl",
				"--trace", "--trace-ascii", "--stderr", "--hsts", "--alt-svc"),
			on(writesDir, "--output-dir"),
			on(readsFile, "-T", "--upload-file", "--cacert", "--capath", "-E", "--cert", "--key", "--crlfile",
				"--netrc-file", "--etag-compare", "--random-file", "--egd-file", "--proxy-cacert", "--proxy-capath",
				"--proxy-cert", "--proxy-key", "--proxy-crlfile", "--unix-socket", "--pinnedpubkey",
				"--proxy-pinnedpubkey")),
		refuse: map[string]string{
			"-K": "reads options from a file the gate does not read", "--config": "reads options from a file the gate does not read",
			"--engine":               "loads an OpenSSL engine, a shared library that runs code",
			"--abstract-unix-socket": "connects to an abstract unix socket, which no path names",
		},
		bare: bareNoFile,
	}
	m.custom = func(a *analyzer, name string, p *parsedArgs, fr frame) {
		for _, o := range p.opts {
			v := o.arg
			switch o.name {
			case "-d", "--data", "--data-ascii", "--data-binary", "--json", "-H", "--header", "--proxy-header":
				atFile(a, name, v, "@", fr)
			case "--data-urlencode":
				if i := strings.IndexByte(v.Text, '@'); v.Literal && i >= 0 && !strings.Contains(v.Text[:i], "=") {
					a.read(literalWord(v.Text[i+1:]), fr)
				} else if !v.Literal {
					a.unknownRead(name+" "+o.name+" "+quote(v.Text)+" may name a file", fr)
				}
			case "-F", "--form":
				if !v.Literal {
					a.unknownRead(name+" "+o.name+" "+quote(v.Text)+" may name a file", fr)
					continue
				}
				if _, val, ok := strings.Cut(v.Text, "="); ok && (strings.HasPrefix(val, "@") || strings.HasPrefix(val, "<")) {
					f, _, _ := strings.Cut(val[1:], ";")
					if f != "-" {
						a.read(literalWord(f), fr)
					}
				}
			case "-b", "--cookie":
				if !v.Literal || !strings.Contains(v.Text, "=") {
					a.read(v, fr)
				}
			case "-w", "--write-out":
				atFile(a, name, v, "@", fr)
				if !v.Literal || strings.Contains(v.Text, "%output{") {
					a.unknownWrite(name+" --write-out "+quote(v.Text)+" may write a file", fr)
				}
			case "-O", "--remote-name", "--remote-name-all", "-J", "--remote-header-name":
				a.unknownWrite(name+" "+o.name+" writes downloads under the names the server gives", fr)
			}
		}
		for _, u := range p.operands {
			switch {
			case !u.Literal:
				if u.lead == 0 || strings.HasPrefix(strings.ToLower(u.prefix), "file:") {
					a.unknownRead(name+" is given the URL "+quote(u.Text)+", which may be a file: URL", fr)
				}
			case strings.HasPrefix(strings.ToLower(u.Text), "file:"):
				f := u.Text[len("file:"):]
				if strings.HasPrefix(f, "//") {
					f = f[2:]
					if i := strings.IndexByte(f, '/'); i >= 0 {
						f = f[i:] // file://host/path
					}
				}
				a.read(literalWord(f), fr)
			}
		}
	}
	return m
}

// atFile records the read of an @file value (curl -d @body.json); "@-"
// is standard input.
func atFile(a *analyzer, name string, v word, at string, fr frame) {
	switch {
	case !v.Literal:
		if v.lead == 0 || v.lead == '@' {
			a.unknownRead(name+" is given "+quote(v.Text)+", which may name a file with @", fr)
		}
	case strings.HasPrefix(v.Text, at) && v.Text != at+"-":
		a.read(literalWord(v.Text[len(at):]), fr)
	}
}

// wgetModel is wget's (wget --help, wget 1.21): it writes each download
// into the working directory (or -P DIR) under the name the URL or the
// server gives, unless -O names the file; -e and --config set options
// the gate does not read.
func wgetModel() *model {
	m := &model{opts: spec("VhbdqvFcNSx46ErkKmpHLe:o:a:i:B:t:O:T:w:Q:P:l:A:R:D:I:X:U:n:", "no-verbose",
		"report-speed=", "config=", "no-config", "rejected-log=", "retry-connrefused", "retry-on-http-error=",
		"no-clobber", "no-netrc", "start-pos=", "progress=", "show-progress", "no-if-modified-since",
		"no-use-server-timestamps", "spider", "dns-timeout=", "connect-timeout=", "read-timeout=", "waitretry=",
		"random-wait", "no-proxy", "bind-address=", "limit-rate=", "no-dns-cache", "restrict-file-names=",
		"ignore-case", "prefer-family=", "user=", "password=", "ask-password", "use-askpass=", "no-iri",
		"local-encoding=", "remote-encoding=", "unlink", "xattr", "no-directories", "no-host-directories",
		"protocol-directories", "cut-dirs=", "http-user=", "http-password=", "no-cache", "default-page=",
		"ignore-length", "header=", "compression=", "max-redirect=", "proxy-user=", "proxy-password=", "referer=",
		"save-headers", "no-http-keep-alive", "no-cookies", "load-cookies=", "save-cookies=",
		"keep-session-cookies", "post-data=", "post-file=", "method=", "body-data=", "body-file=",
		"content-disposition", "content-on-error", "auth-no-challenge", "secure-protocol=", "https-only",
		"no-check-certificate", "certificate=", "certificate-type=", "private-key=", "private-key-type=",
		"ca-certificate=", "ca-directory=", "crl-file=", "pinnedpubkey=", "ciphers=", "no-hsts", "hsts-file=",
		"ftp-user=", "ftp-password=", "no-remove-listing", "no-glob", "no-passive-ftp", "preserve-permissions",
		"retr-symlinks", "ftps-implicit", "ftps-resume-ssl", "ftps-clear-data-connection", "ftps-fallback-to-ftp",
		"warc-file=", "warc-header=", "warc-max-size=", "warc-cdx", "warc-dedup=", "no-warc-compression",
		"no-warc-digests", "no-warc-keep-log", "warc-tempdir=", "delete-after", "convert-file-only", "backups=",
		"strict-comments", "accept-regex=", "reject-regex=", "regex-type=", "exclude-domains=", "follow-ftp",
		"follow-tags=", "ignore-tags=", "trust-server-names", "no-parent", "version", "help", "background",
		"execute=", "output-file=", "append-output=", "debug", "quiet", "verbose", "input-file=", "force-html",
		"base=", "tries=", "output-document=", "continue", "timestamping", "server-response", "timeout=",
		"wait=", "quota=", "inet4-only", "inet6-only", "force-directories", "directory-prefix=",
		"adjust-extension", "recursive", "level=", "convert-links", "backup-converted", "mirror",
		"page-requisites", "accept=", "reject=", "domains=", "include-directories=", "exclude-directories=",
		"user-agent=", "span-hosts", "relative").permuting(),
		values: merge(
			on(writesFile, "-O", "--output-document", "-o", "--output-file", "-a", "--append-output",
				"--save-cookies", "--rejected-log", "--warc-file", "--hsts-file"),
			on(writesDir, "-P", "--directory-prefix", "--warc-tempdir"),
			on(readsFile, "-i", "--input-file", "--post-file", "--body-file", "--load-cookies", "--certificate",
				"--private-key", "--ca-certificate", "--ca-directory", "--crl-file", "--warc-dedup", "--pinnedpubkey"),
			on(runsProgram, "--use-askpass")),
		refuse: map[string]string{
			"--config": "reads options from a file the gate does not read",
			"-e":       "runs a .wgetrc command, which can set any option", "--execute": "runs a .wgetrc command, which can set any option",
		},
		bare: bareNoFile,
	}
	m.custom = func(a *analyzer, name string, p *parsedArgs, fr frame) {
		if p.has("--spider") || p.has("-O", "--output-document") && !p.has("-r", "--recursive", "-m", "--mirror", "-p", "--page-requisites") {
			return
		}
		a.unknownWrite(name+" writes each download under the name its URL or the server gives", fr)
	}
	return m
}

// sshOptions are the ssh_config(5) keywords ssh -o may set, by what
// their value is; others (ProxyCommand, LocalCommand, KnownHostsCommand,
// Include, Match, PKCS11Provider, SecurityKeyProvider, XAuthLocation …)
// run programs or load files and are refused, as is ForwardAgent, which
// lends the person's keys to the remote host.
var sshOptions = map[string]effect{
	"batchmode": noFile, "connecttimeout": noFile, "connectionattempts": noFile, "stricthostkeychecking": noFile,
	"userknownhostsfile": writesFile, "globalknownhostsfile": readsFile, "port": noFile, "user": noFile,
	"serveraliveinterval": noFile, "serveralivecountmax": noFile, "loglevel": noFile, "compression": noFile,
	"identitiesonly": noFile, "identityfile": readsFile, "certificatefile": readsFile,
	"preferredauthentications": noFile, "passwordauthentication": noFile, "pubkeyauthentication": noFile,
	"kbdinteractiveauthentication": noFile, "challengeresponseauthentication": noFile,
	"hostkeyalgorithms": noFile, "kexalgorithms": noFile, "ciphers": noFile, "macs": noFile,
	"pubkeyacceptedalgorithms": noFile, "pubkeyacceptedkeytypes": noFile, "casignaturealgorithms": noFile,
	"addressfamily": noFile, "checkhostip": noFile, "hashknownhosts": noFile, "requesttty": noFile,
	"sendenv": noFile, "setenv": noFile, "tcpkeepalive": noFile, "updatehostkeys": noFile, "visualhostkey": noFile,
	"numberofpasswordprompts": noFile, "exitonforwardfailure": noFile, "controlmaster": noFile,
	"controlpersist": noFile, "controlpath": writesFile, "hostname": noFile, "hostkeyalias": noFile,
	"proxyjump": noFile, "canonicalizehostname": noFile, "canonicaldomains": noFile, "escapechar": noFile,
	"clearallforwardings": noFile, "rekeylimit": noFile, "ipqos": noFile, "fingerprinthash": noFile,
	"requiredrsasize": noFile, "hostbasedauthentication": noFile, "gssapiauthentication": noFile,
	"gssapidelegatecredentials": noFile, "bindaddress": noFile, "bindinterface": noFile,
	"nohostauthenticationforlocalhost": noFile, "verifyhostkeydns": noFile, "revokedhostkeys": readsFile,
	"addkeystoagent": noFile, "forwardx11": noFile, "forwardx11trusted": noFile, "forwardx11timeout": noFile,
	"sessiontype": noFile, "stdinnull": noFile, "forkafterauthentication": noFile, "permitremoteopen": noFile,
	"obscurekeystroketiming": noFile, "remotecommand": noFile, "identityagent": readsFile, "gatewayports": noFile,
	"streamlocalbindunlink": noFile, "streamlocalbindmask": noFile, "tunnel": noFile, "logverbose": noFile,
	"enableescapecommandline": noFile, "forwardagent": noFile,
}

// sshOption judges one ssh -o KEY=VALUE.
func sshOption(a *analyzer, name string, v word, fr frame) {
	if !v.Literal {
		a.refuseOption(name, "-o %s is computed when the line runs and may be ProxyCommand", quote(v.Text))
		return
	}
	key, value, ok := strings.Cut(v.Text, "=")
	if !ok {
		key, value, _ = strings.Cut(v.Text, " ")
	}
	key = strings.ToLower(strings.TrimSpace(key))
	value = strings.TrimSpace(value)
	e, known := sshOptions[key]
	switch {
	case !known:
		a.refuseOption(name, "-o %s sets an option that runs a program or loads files, or that the gate does not model", quote(v.Text))
	case key == "forwardagent" && !strings.EqualFold(value, "no"):
		a.refuseOption(name, "-o %s lends the person's keys to the remote host", quote(v.Text))
	case e != noFile && !strings.EqualFold(value, "none"):
		a.effect(name, "-o", e, literalWord(value), fr)
	}
}

// sshModel is OpenSSH ssh's (ssh(1), 9.2): -F reads a configuration that
// can run programs (refused unless none), -I loads a PKCS#11 library, -A
// lends the person's keys to the remote host; -i reads, -E and -S write.
// The command after the destination runs on the remote host.
func sshModel() *model {
	return &model{handler: func(a *analyzer, name string, words []word, fr frame) []word {
		p := sshSpec.parseStrict(words, false, nil)
		if p.unknown == "" && len(p.operands) > 1 {
			// ssh host -p 22 cmd: options may follow the destination.
			more := sshSpec.parseStrict(append([]word{words[0]}, p.operands[1:]...), false, nil)
			p.opts, p.unknown, p.computed = append(p.opts, more.opts...), more.unknown, more.computed
		}
		switch {
		case p.unknown != "":
			a.fail(CodeUnknownOption, "%s is given the option %s, which the gate does not model", name, quote(p.unknown))
			return nil
		case p.computed != "":
			a.refuseOption(name, "is given %s, which is computed when the line runs and may be an option such as -o ProxyCommand", quote(p.computed))
			return nil
		}
		sshOpts(a, name, p.opts, fr)
		return nil
	}}
}

var sshSpec = spec("46AaCfGgKkMNnqsTtVvXxYyB:b:c:D:E:e:F:I:i:J:L:l:m:O:o:P:p:Q:R:S:W:w:")

// sshOpts judges the options ssh and scp share.
func sshOpts(a *analyzer, name string, opts []parsedOpt, fr frame) {
	for _, o := range opts {
		if a.err != nil {
			return
		}
		v := o.arg
		switch o.name {
		case "-o":
			sshOption(a, name, v, fr)
		case "-F":
			if !v.Literal || v.Text != "none" && v.Text != "/dev/null" {
				a.refuseOption(name, "-F %s reads a configuration that can run programs (ProxyCommand, LocalCommand, Match exec)", quote(v.Text))
			}
		case "-I":
			a.refuseOption(name, "-I loads a PKCS#11 library, which runs code")
		case "-A":
			if name == "ssh" {
				a.refuseOption(name, "-A lends the person's keys to the remote host")
			}
		case "-i":
			a.read(v, fr)
		case "-E":
			a.write(v, true, fr)
		case "-S":
			if name == "ssh" && !(v.Literal && v.Text == "none") {
				a.write(v, false, fr)
			} else if name == "scp" {
				a.effect(name, "-S", runsProgram, v, fr)
			}
		case "-D":
			if name == "scp" {
				a.effect(name, "-D", runsProgram, v, fr)
			}
		case "-L", "-R":
			if !v.Literal || strings.Contains(v.Text, "/") {
				a.unknownWrite(name+" "+o.name+" "+quote(v.Text)+" may listen on a unix socket", fr)
			}
		}
	}
}

// scpModel is scp's (scp(1)): local sources are read and a local
// destination written; host:path operands are remote. -S and -D run the
// program they name.
func scpModel() *model {
	return &model{handler: func(a *analyzer, name string, words []word, fr frame) []word {
		p := spec("346ABCOpqRrsTvc:D:F:i:J:l:o:P:S:X:").permuting().parseStrict(words, false, nil)
		switch {
		case p.unknown != "":
			a.fail(CodeUnknownOption, "%s is given the option %s, which the gate does not model", name, quote(p.unknown))
			return nil
		case p.computed != "":
			a.refuseOption(name, "is given %s, which is computed when the line runs and may be an option such as -S", quote(p.computed))
			return nil
		}
		sshOpts(a, name, p.opts, fr)
		remoteCopy(a, name, p.operands, p.has("-r"), fr)
		return nil
	}}
}

// remote reports an scp or rsync operand on another host: host:path,
// user@host:path, host::module or a URL.
func remote(w word) bool {
	t := w.prefix
	if strings.Contains(t, "://") {
		return true
	}
	i := strings.IndexByte(t, ':')
	return i > 0 && !strings.Contains(t[:i], "/")
}

// remoteCopy judges the operands of scp and rsync: local sources read,
// a local destination written (whole, when recursive).
func remoteCopy(a *analyzer, name string, ops []word, recursive bool, fr frame) {
	if len(ops) == 0 {
		return
	}
	last := ops[len(ops)-1]
	if len(ops) == 1 {
		last = word{} // rsync SRC lists it
	}
	srcs := ops
	if last.Text != "" {
		srcs = ops[:len(ops)-1]
	}
	for _, s := range srcs {
		if !remote(s) {
			a.read(s, fr)
		}
	}
	if last.Text != "" && !remote(last) {
		// below the destination: what it copies, refused where a protected
		// path lies below (Write.Tree)
		a.writeTree(last, false, recursive, fr)
	}
}

// rsyncModel is rsync's (rsync(1), 3.2): -e runs the remote shell it
// names, --files-from reads a list, --exclude-from and --include-from
// read, --log-file and --write-batch write; --rsync-path and
// --remote-option run programs on the other side, which may be local.
func rsyncModel() *model {
	m := &model{opts: spec("vqcarRbulLkKHpEAXogDtOJSnWxy0e:Cf:FzhiM:T:B:PdmIUNs846V", withNo("verbose", "info=", "debug=",
		"stderr=", "quiet", "motd", "checksum", "archive", "recursive", "relative", "implied-dirs", "backup",
		"backup-dir=", "suffix=", "update", "inplace", "append", "append-verify", "dirs", "old-dirs", "mkpath",
		"links", "copy-links", "copy-unsafe-links", "safe-links", "munge-links", "copy-dirlinks", "keep-dirlinks",
		"hard-links", "perms", "executability", "chmod=", "acls", "xattrs", "owner", "group", "devices",
		"copy-devices", "write-devices", "specials", "times", "atimes", "open-noatime", "crtimes",
		"omit-dir-times", "omit-link-times", "super", "fake-super", "sparse", "preallocate", "dry-run",
		"whole-file", "checksum-choice=", "cc=", "one-file-system", "block-size=", "rsh=", "rsync-path=",
		"existing", "ignore-existing", "remove-source-files", "del", "delete", "delete-before", "delete-during",
		"delete-delay", "delete-after", "delete-excluded", "ignore-missing-args", "delete-missing-args",
		"ignore-errors", "force", "max-delete=", "max-size=", "min-size=", "max-alloc=", "partial",
		"partial-dir=", "delay-updates", "prune-empty-dirs", "numeric-ids", "usermap=", "groupmap=", "chown=",
		"timeout=", "contimeout=", "ignore-times", "size-only", "modify-window=", "temp-dir=", "fuzzy",
		"compare-dest=", "copy-dest=", "link-dest=", "compress", "compress-choice=", "zc=", "compress-level=",
		"zl=", "skip-compress=", "cvs-exclude", "filter=", "exclude=", "exclude-from=", "include=",
		"include-from=", "files-from=", "from0", "old-args", "secluded-args", "protect-args", "trust-sender",
		"copy-as=", "address=", "port=", "sockopts=", "blocking-io", "outbuf=", "stats", "8-bit-output",
		"human-readable", "progress", "itemize-changes", "remote-option=", "out-format=", "log-file=",
		"log-file-format=", "password-file=", "early-input=", "list-only", "bwlimit=", "stop-after=",
		"time-limit=", "stop-at=", "fsync", "write-batch=", "only-write-batch=", "read-batch=", "protocol=",
		"iconv=", "checksum-seed=", "ipv4", "ipv6", "version", "help")...).permuting(),
		values: merge(
			on(runsProgram, "-e", "--rsh"),
			on(readsList, "--files-from"),
			on(readsFile, "--exclude-from", "--include-from", "--read-batch", "--password-file", "--early-input",
				"--compare-dest", "--copy-dest", "--link-dest"),
			on(writesFile, "--log-file", "--write-batch", "--only-write-batch"),
			on(writesDir, "-T", "--temp-dir", "--backup-dir", "--partial-dir")),
		refuse: map[string]string{
			"--rsync-path": "runs a program on the other side, which may be this host", "-M": "passes options to the other side, which may be this host",
			"--remote-option": "passes options to the other side, which may be this host",
		},
		bare: bareNoFile,
	}
	m.custom = func(a *analyzer, name string, p *parsedArgs, fr frame) {
		for _, o := range p.opts {
			if o.name == "-f" || o.name == "--filter" {
				if !o.arg.Literal || strings.Contains(o.arg.Text, "merge") || strings.HasPrefix(o.arg.Text, ".") || strings.HasPrefix(o.arg.Text, ":") {
					a.unknownRead(name+" --filter "+quote(o.arg.Text)+" reads rules from files", fr)
				}
			}
		}
		remoteCopy(a, name, p.operands, p.has("-r", "--recursive", "-a", "--archive"), fr)
	}
	return m
}
