// Package core implements the Joule Code wire format v1: canonical CBOR,
// BLAKE3 content addresses, tree states, coding operations and their
// application, Ed25519-signed operations, and JCR-1 op receipts (OpReceipt)
// sealed as COSE_Sign1 envelopes.
//
// Every decoder here is strict: it rejects duplicate keys, indefinite
// lengths, floats, tags, unknown keys and any encoding that is not the
// canonical one, by re-encoding what it decoded and comparing bytes. Input is
// never normalised. The pinned choices are in docs/wire.md.
package core
