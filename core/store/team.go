package store

import (
	"context"
	"errors"
	"fmt"
)

// A team's PostgreSQL store, set up so that no member can cheat
// (docs/team.md, "Who may write what"). Two group roles hold the
// privileges; each person and machine logs in with a role of its own that
// is a member of one of them:
//
//   - TeamMembers append receipts to their own sessions, debit and reserve
//     against grants, and read everything. They cannot write a trust chain
//     (TrustSessions), insert or revoke a grant, change a grant's signed
//     columns, point the legacy active-grant setting elsewhere, or update,
//     delete or truncate anything the log holds.
//   - TeamAdmins may do what members do, and also append to the trust
//     chains, insert grants and set the revoked flag (one way: a revoked
//     grant stays revoked).
//
// The database cannot verify an Ed25519 signature or a BLAKE3 chain hash,
// so it enforces who may append to which chain, and that every chain and
// the log only grow in order (a trigger checks each new entry's log index,
// sequence and prev against what is stored); every machine verifies the
// signatures and hashes, the trust chain with the team's administrators'
// keys (core/trust).
const (
	TeamAdmins  = "joule_admins"
	TeamMembers = "joule_members"
)

// TrustSessions are the sessions only TeamAdmins may append to: the
// grants' trust chain and the store's own record (core/trust).
var TrustSessions = []string{"joule-grants", "joule-store"}

// TeamRolesSQL creates the two group roles; a superuser (or a role with
// CREATEROLE) runs it once per server, before SetupTeam.
const TeamRolesSQL = `CREATE ROLE joule_members NOLOGIN;
CREATE ROLE joule_admins NOLOGIN IN ROLE joule_members;`

// teamSQL sets the roles' privileges, the row-level security policies and
// the checks of what is appended (log index, chain prev, Merkle hashes,
// session heads, ledger totals, cached figures, checkpoints, revocation,
// home chains). It is idempotent: run again after an upgrade that adds
// tables, it grants what the new schema needs.
const teamSQL = `
-- Nothing but what is granted below; no one but the owner truncates,
-- deletes from or rewrites the log.
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM PUBLIC, joule_members, joule_admins;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM PUBLIC, joule_members, joule_admins;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO joule_members;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO joule_members;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO joule_members;

-- Appends: the receipt, its session head, the tree hashes, the ledger,
-- checkpoints. The log head row is locked (FOR UPDATE needs UPDATE).
GRANT INSERT ON sessions, entries, tlog_hashes, ledger, checkpoints, settings TO joule_members;
GRANT UPDATE (last_seq, head, last_ns) ON sessions TO joule_members;
GRANT UPDATE (id) ON log_head TO joule_members;
GRANT UPDATE (value) ON settings TO joule_members;
-- Spending: the cached totals (each checked against the ledger by every
-- decision) and the proxy's leases.
GRANT UPDATE (spent_uj, reserved_uj) ON grants TO joule_members;
GRANT INSERT, DELETE ON reservations TO joule_members;
GRANT UPDATE (amount_uj) ON reservations TO joule_members;
GRANT INSERT ON reservation_grants TO joule_members;
-- Administration: issuing and revoking grants.
GRANT INSERT ON grants TO joule_admins;
GRANT UPDATE (revoked) ON grants TO joule_admins;

CREATE OR REPLACE FUNCTION joule_trust_session(s text) RETURNS boolean
	LANGUAGE sql IMMUTABLE SET search_path = pg_catalog
	AS $f$ SELECT s IN ('joule-grants', 'joule-store') $f$;

-- Evaluated as the caller (no SECURITY DEFINER): is the role that runs the
-- statement one of the team's administrators?
CREATE OR REPLACE FUNCTION joule_team_admin() RETURNS boolean
	LANGUAGE sql STABLE SET search_path = pg_catalog
	AS $f$ SELECT pg_has_role(current_user, 'joule_admins', 'MEMBER') $f$;

ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE entries ENABLE ROW LEVEL SECURITY;
ALTER TABLE grants ENABLE ROW LEVEL SECURITY;
ALTER TABLE settings ENABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS joule_read ON sessions;
DROP POLICY IF EXISTS joule_append ON sessions;
DROP POLICY IF EXISTS joule_advance ON sessions;
CREATE POLICY joule_read ON sessions FOR SELECT USING (true);
CREATE POLICY joule_append ON sessions FOR INSERT WITH CHECK (NOT joule_trust_session(id) OR joule_team_admin());
CREATE POLICY joule_advance ON sessions FOR UPDATE
	USING (NOT joule_trust_session(id) OR joule_team_admin())
	WITH CHECK (NOT joule_trust_session(id) OR joule_team_admin());

-- A home's own chain (joule-home:…, its issuers and configuration) is
-- appended to only by the login role that appended to it first: another
-- member's receipt there would leave that home's chain unverifiable.
CREATE TABLE IF NOT EXISTS joule_home_roles (
	session TEXT COLLATE "C" PRIMARY KEY,
	role    NAME NOT NULL
);
REVOKE ALL ON joule_home_roles FROM PUBLIC, joule_members, joule_admins;
GRANT SELECT ON joule_home_roles TO joule_members;
CREATE OR REPLACE FUNCTION joule_home_claim(s text) RETURNS boolean
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
	AS $f$
DECLARE
	owner name;
BEGIN
	IF s NOT LIKE 'joule-home:%' THEN
		RETURN true;
	END IF;
	INSERT INTO public.joule_home_roles (session, role) VALUES (s, session_user) ON CONFLICT (session) DO NOTHING;
	SELECT role INTO owner FROM public.joule_home_roles WHERE session = s;
	RETURN owner = session_user;
END $f$;
REVOKE ALL ON FUNCTION joule_home_claim(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION joule_home_claim(text) TO joule_members;

DROP POLICY IF EXISTS joule_read ON entries;
DROP POLICY IF EXISTS joule_append ON entries;
CREATE POLICY joule_read ON entries FOR SELECT USING (true);
CREATE POLICY joule_append ON entries FOR INSERT
	WITH CHECK ((NOT joule_trust_session(session) OR joule_team_admin()) AND joule_home_claim(session));

DROP POLICY IF EXISTS joule_read ON grants;
DROP POLICY IF EXISTS joule_issue ON grants;
DROP POLICY IF EXISTS joule_spend ON grants;
CREATE POLICY joule_read ON grants FOR SELECT USING (true);
CREATE POLICY joule_issue ON grants FOR INSERT WITH CHECK (joule_team_admin());
CREATE POLICY joule_spend ON grants FOR UPDATE USING (true) WITH CHECK (true);

-- The active grant setting decides nothing since the trust chain does
-- (core/trust), but store check reports one that disagrees: only an
-- administrator writes it.
DROP POLICY IF EXISTS joule_read ON settings;
DROP POLICY IF EXISTS joule_write ON settings;
DROP POLICY IF EXISTS joule_change ON settings;
CREATE POLICY joule_read ON settings FOR SELECT USING (true);
CREATE POLICY joule_write ON settings FOR INSERT
	WITH CHECK (joule_team_admin() OR NOT (key = 'active_grant' OR key LIKE 'active\_grant:%'));
CREATE POLICY joule_change ON settings FOR UPDATE
	USING (joule_team_admin() OR NOT (key = 'active_grant' OR key LIKE 'active\_grant:%'))
	WITH CHECK (joule_team_admin() OR NOT (key = 'active_grant' OR key LIKE 'active\_grant:%'));

-- Every new entry extends the log and its session's chain: it takes the
-- next log index, and its prev is the hash of its session's receipt before
-- it (zero for the first). SECURITY DEFINER, so that what it reads is the
-- whole table whatever the caller may see, with a fixed search_path so that
-- no caller's object stands in for the tables.
CREATE OR REPLACE FUNCTION joule_check_append() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
	AS $f$
DECLARE
	next_idx  bigint;
	prev_hash bytea;
BEGIN
	SELECT COALESCE(max(idx) + 1, 0) INTO next_idx FROM public.entries;
	IF NEW.idx <> next_idx THEN
		RAISE EXCEPTION 'joule: log index % is not the next one (%): the log only grows', NEW.idx, next_idx
			USING ERRCODE = 'check_violation';
	END IF;
	IF NEW.seq = 1 THEN
		prev_hash := decode(repeat('00', 32), 'hex');
	ELSE
		SELECT hash INTO prev_hash FROM public.entries WHERE session = NEW.session AND seq = NEW.seq - 1;
	END IF;
	IF prev_hash IS NULL OR prev_hash <> NEW.prev THEN
		RAISE EXCEPTION 'joule: receipt % of session % does not follow the one before it', NEW.seq, NEW.session
			USING ERRCODE = 'check_violation';
	END IF;
	RETURN NEW;
END $f$;
REVOKE ALL ON FUNCTION joule_check_append() FROM PUBLIC;
DROP TRIGGER IF EXISTS joule_check_append ON entries;
CREATE TRIGGER joule_check_append BEFORE INSERT ON entries FOR EACH ROW EXECUTE FUNCTION joule_check_append();

-- The Merkle log's stored hashes (RFC 6962, as golang.org/x/mod/sumdb/tlog
-- stores them) are checked too: at commit, each new entry's leaf hash and
-- the subtree hashes it completes must be what its envelope and the hashes
-- before it give, and a checkpoint row must name the log's tree hash at its
-- size, in its columns and in its note's text. A member's hand-made entry
-- can then break no one's tree but fail its own transaction.
CREATE OR REPLACE FUNCTION joule_stored(lvl int, n bigint) RETURNS bytea
	LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
	AS $f$
DECLARE
	i bigint := 0;
	h bytea;
BEGIN
	FOR l IN 1..lvl LOOP
		n := 2 * n + 1;
	END LOOP;
	WHILE n > 0 LOOP
		i := i + n;
		n := n >> 1;
	END LOOP;
	SELECT hash INTO h FROM public.tlog_hashes WHERE id = i + lvl;
	RETURN h;
END $f$;
REVOKE ALL ON FUNCTION joule_stored(int, bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION joule_tree_hash(size bigint) RETURNS bytea
	LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
	AS $f$
DECLARE
	lo bigint := 0;
	k bigint;
	lvl int;
	parts bytea[] := '{}';
	h bytea;
BEGIN
	IF size = 0 THEN
		RETURN decode(repeat('00', 32), 'hex');
	END IF;
	WHILE lo < size LOOP
		k := 1;
		lvl := 0;
		WHILE k * 2 <= size - lo LOOP
			k := k * 2;
			lvl := lvl + 1;
		END LOOP;
		parts := parts || joule_stored(lvl, lo >> lvl);
		lo := lo + k;
	END LOOP;
	h := parts[array_length(parts, 1)];
	FOR i IN REVERSE array_length(parts, 1) - 1 .. 1 LOOP
		h := sha256('\x01'::bytea || parts[i] || h);
	END LOOP;
	RETURN h;
END $f$;
REVOKE ALL ON FUNCTION joule_tree_hash(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION joule_check_leaf() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
	AS $f$
DECLARE
	h bytea := sha256('\x00'::bytea || NEW.envelope);
	m bigint := NEW.idx;
	lvl int := 0;
BEGIN
	IF joule_stored(0, m) IS DISTINCT FROM h THEN
		RAISE EXCEPTION 'joule: the log''s leaf hash at index % is not its envelope''s', NEW.idx USING ERRCODE = 'check_violation';
	END IF;
	WHILE m & 1 = 1 LOOP
		h := sha256('\x01'::bytea || joule_stored(lvl, m - 1) || h);
		lvl := lvl + 1;
		m := m >> 1;
		IF joule_stored(lvl, m) IS DISTINCT FROM h THEN
			RAISE EXCEPTION 'joule: the log''s tree hash at level % over index % is not its children''s', lvl, NEW.idx USING ERRCODE = 'check_violation';
		END IF;
	END LOOP;
	RETURN NULL;
END $f$;
REVOKE ALL ON FUNCTION joule_check_leaf() FROM PUBLIC;
DROP TRIGGER IF EXISTS joule_check_leaf ON entries;
CREATE CONSTRAINT TRIGGER joule_check_leaf AFTER INSERT ON entries
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION joule_check_leaf();

CREATE OR REPLACE FUNCTION joule_check_checkpoint() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
	AS $f$
DECLARE
	size bigint;
	body text := convert_from(NEW.note, 'UTF8');
BEGIN
	SELECT COALESCE(max(idx) + 1, 0) INTO size FROM public.entries;
	IF NEW.size > size OR joule_tree_hash(NEW.size) IS DISTINCT FROM NEW.root
		OR split_part(body, E'\n', 2) <> NEW.size::text OR split_part(body, E'\n', 3) <> encode(NEW.root, 'base64') THEN
		RAISE EXCEPTION 'joule: checkpoint of size % is not the log''s', NEW.size USING ERRCODE = 'check_violation';
	END IF;
	RETURN NEW;
END $f$;
REVOKE ALL ON FUNCTION joule_check_checkpoint() FROM PUBLIC;
DROP TRIGGER IF EXISTS joule_check_checkpoint ON checkpoints;
CREATE TRIGGER joule_check_checkpoint BEFORE INSERT ON checkpoints FOR EACH ROW EXECUTE FUNCTION joule_check_checkpoint();

-- A session's head row names, at commit, its last receipt: a head moved
-- on without its receipt would leave the session unable to append.
CREATE OR REPLACE FUNCTION joule_check_head() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
	AS $f$
DECLARE
	h bytea;
BEGIN
	-- (Of a transaction's several updates of one head, each names a
	-- receipt that is there at commit; none beyond the last can be.)
	SELECT hash INTO h FROM public.entries WHERE session = NEW.id AND seq = NEW.last_seq;
	IF h IS DISTINCT FROM NEW.head THEN
		RAISE EXCEPTION 'joule: session % head (seq %) is not its last receipt', NEW.id, NEW.last_seq USING ERRCODE = 'check_violation';
	END IF;
	RETURN NULL;
END $f$;
REVOKE ALL ON FUNCTION joule_check_head() FROM PUBLIC;
DROP TRIGGER IF EXISTS joule_check_head ON sessions;
CREATE CONSTRAINT TRIGGER joule_check_head AFTER INSERT OR UPDATE ON sessions
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION joule_check_head();

-- A session head only moves forward; a revoked grant stays revoked.
CREATE OR REPLACE FUNCTION joule_check_forward() RETURNS trigger
	LANGUAGE plpgsql SET search_path = pg_catalog
	AS $f$
BEGIN
	IF NEW.last_seq <= OLD.last_seq THEN
		RAISE EXCEPTION 'joule: session % head set back from % to %', OLD.id, OLD.last_seq, NEW.last_seq
			USING ERRCODE = 'check_violation';
	END IF;
	RETURN NEW;
END $f$;
CREATE OR REPLACE FUNCTION joule_check_revoked() RETURNS trigger
	LANGUAGE plpgsql SET search_path = pg_catalog
	AS $f$
BEGIN
	IF OLD.revoked = 1 AND NEW.revoked <> 1 THEN
		RAISE EXCEPTION 'joule: grant % is revoked; a revocation is not undone', OLD.id
			USING ERRCODE = 'check_violation';
	END IF;
	RETURN NEW;
END $f$;
DROP TRIGGER IF EXISTS joule_check_forward ON sessions;
CREATE TRIGGER joule_check_forward BEFORE UPDATE ON sessions FOR EACH ROW EXECUTE FUNCTION joule_check_forward();
DROP TRIGGER IF EXISTS joule_check_revoked ON grants;
CREATE TRIGGER joule_check_revoked BEFORE UPDATE ON grants FOR EACH ROW EXECUTE FUNCTION joule_check_revoked();

-- The ledger's running total is the one before plus the amount, and a
-- grant's cached figures are its ledger's last total and the sum of its
-- open reservations when its transaction commits: a member who may update
-- them to debit cannot set them to anything else (which every decision
-- would refuse as store-corrupt, on every machine).
CREATE OR REPLACE FUNCTION joule_check_ledger() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
	AS $f$
DECLARE
	before bigint;
BEGIN
	SELECT total_uj INTO before FROM public.ledger WHERE grant_id = NEW.grant_id ORDER BY id DESC LIMIT 1;
	IF NEW.total_uj <> COALESCE(before, 0) + NEW.amount_uj THEN
		RAISE EXCEPTION 'joule: ledger total % of grant % is not % plus %', NEW.total_uj, NEW.grant_id, COALESCE(before, 0), NEW.amount_uj
			USING ERRCODE = 'check_violation';
	END IF;
	RETURN NEW;
END $f$;
REVOKE ALL ON FUNCTION joule_check_ledger() FROM PUBLIC;
DROP TRIGGER IF EXISTS joule_check_ledger ON ledger;
CREATE TRIGGER joule_check_ledger BEFORE INSERT ON ledger FOR EACH ROW EXECUTE FUNCTION joule_check_ledger();

CREATE OR REPLACE FUNCTION joule_check_cache(which text) RETURNS void
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
	AS $f$
DECLARE
	g public.grants%ROWTYPE;
	spent bigint;
	held bigint;
BEGIN
	SELECT * INTO g FROM public.grants WHERE id = which;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	SELECT l.total_uj INTO spent FROM public.ledger l WHERE l.grant_id = g.id ORDER BY l.id DESC LIMIT 1;
	SELECT sum(r.amount_uj) INTO held FROM public.reservation_grants rg JOIN public.reservations r ON r.id = rg.reservation WHERE rg.grant_id = g.id;
	IF g.spent_uj <> COALESCE(spent, 0) OR g.reserved_uj <> COALESCE(held, 0) THEN
		RAISE EXCEPTION 'joule: grant % caches spent % reserved %, its ledger and reservations say % and %', g.id, g.spent_uj, g.reserved_uj, COALESCE(spent, 0), COALESCE(held, 0)
			USING ERRCODE = 'check_violation';
	END IF;
END $f$;
REVOKE ALL ON FUNCTION joule_check_cache(text) FROM PUBLIC;

-- Checked at commit, for every grant whose figures, ledger or
-- reservations the transaction touched.
CREATE OR REPLACE FUNCTION joule_check_caches() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
	AS $f$
DECLARE
	gid text;
BEGIN
	IF TG_TABLE_NAME = 'grants' THEN
		PERFORM joule_check_cache(NEW.id);
	ELSIF TG_TABLE_NAME = 'ledger' THEN
		PERFORM joule_check_cache(NEW.grant_id);
	ELSIF TG_TABLE_NAME = 'reservation_grants' THEN
		PERFORM joule_check_cache(CASE WHEN TG_OP = 'DELETE' THEN OLD.grant_id ELSE NEW.grant_id END);
	ELSE -- reservations, updated
		FOR gid IN SELECT rg.grant_id FROM public.reservation_grants rg WHERE rg.reservation = NEW.id LOOP
			PERFORM joule_check_cache(gid);
		END LOOP;
	END IF;
	RETURN NULL;
END $f$;
REVOKE ALL ON FUNCTION joule_check_caches() FROM PUBLIC;
DROP TRIGGER IF EXISTS joule_check_cache ON grants;
CREATE CONSTRAINT TRIGGER joule_check_cache AFTER INSERT OR UPDATE ON grants
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION joule_check_caches();
DROP TRIGGER IF EXISTS joule_check_cache ON ledger;
CREATE CONSTRAINT TRIGGER joule_check_cache AFTER INSERT ON ledger
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION joule_check_caches();
DROP TRIGGER IF EXISTS joule_check_cache ON reservation_grants;
CREATE CONSTRAINT TRIGGER joule_check_cache AFTER INSERT OR DELETE ON reservation_grants
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION joule_check_caches();
DROP TRIGGER IF EXISTS joule_check_cache ON reservations;
CREATE CONSTRAINT TRIGGER joule_check_cache AFTER UPDATE ON reservations
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION joule_check_caches();
`

// SetupTeam gives a PostgreSQL store the team's roles, privileges,
// row-level security policies and append checks (teamSQL), in one
// transaction. It must run as the database's owner, after the schema is
// current; it is idempotent. The roles TeamAdmins and TeamMembers must
// exist (TeamRolesSQL). Add people with GRANT joule_members TO alice (or
// joule_admins).
func (s *Store) SetupTeam(ctx context.Context) error {
	if !s.pg {
		return errors.New("team roles are for a PostgreSQL store; a SQLite store is one user's file")
	}
	if s.readOnly {
		return errors.New("store opened read-only")
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.classify(err)
	}
	defer tx.Rollback()
	var roles int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pg_roles WHERE rolname IN ('joule_members', 'joule_admins')`).Scan(&roles); err != nil {
		return s.classify(err)
	}
	if roles != 2 {
		return fmt.Errorf("the roles %s and %s do not exist: a superuser creates them first:\n%s", TeamMembers, TeamAdmins, TeamRolesSQL)
	}
	if _, err := tx.ExecContext(ctx, teamSQL); err != nil {
		return fmt.Errorf("set up team roles (run as the database owner): %w", err)
	}
	if err := tx.Commit(); err != nil {
		return s.classify(err)
	}
	return nil
}
