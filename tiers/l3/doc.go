// Package l3 is the cascade's local-model tier: an open-weight model served
// by Ollama or an OpenAI-compatible server (vLLM) answers a request with
// search/replace edit blocks, which are applied to a scratch copy of the
// tree and validated (gofmt, go build, go vet, or a check command) before
// the tier may close the request with a signed coding op.
package l3
