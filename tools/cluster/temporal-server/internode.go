// The server's internode listeners (history, matching, the internal frontend) accept only the
// server's own certificate, not any certificate of the CA that signed it.
//
// Why: with authorisation on, the server's own worker service calls the internal frontend, which
// Temporal serves with the internode TLS settings and a fixed claim mapper that makes every caller
// an admin (no token is checked there: it is meant for the server itself). The internode settings
// only say which CA a client certificate must come from, and in this topology one CA signs every
// certificate (frontend, internode, workers, gateways, operator, Temporal Web). Without this check
// a gateway's certificate, with no token, could call the internal frontend (or history) directly
// and terminate any flow: what the authorizer forbids it at the public frontend.
//
// So every internode server's TLS config also requires the client certificate's subject common
// name to be one of the internode names: MPF_INTERNODE_PEER_NAMES (comma-separated), by default
// "internode", the name the topology's certificate job gives the internode certificate
// (tools/cluster/topology.ts, tlsComponentJob). The public frontend is unchanged: its callers are
// authorised by their tokens.
package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/rpc/encryption"
)

const defaultInternodePeer = "internode"

// internodePeerNames: MPF_INTERNODE_PEER_NAMES, or the default.
func internodePeerNames() map[string]bool {
	names := map[string]bool{}
	for _, n := range strings.Split(os.Getenv("MPF_INTERNODE_PEER_NAMES"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			names[n] = true
		}
	}
	if len(names) == 0 {
		names[defaultInternodePeer] = true
	}
	return names
}

// internodeOnlyProvider is the configured TLS provider with the internode server's peers checked by name.
type internodeOnlyProvider struct {
	encryption.TLSConfigProvider
	peers map[string]bool
}

// newInternodeOnlyProvider wraps the provider the server would build from its config. Nil when the
// config has no internode TLS (then the server builds its own, as upstream).
func newInternodeOnlyProvider(tlsCfg config.RootTLS, logger log.Logger) (encryption.TLSConfigProvider, error) {
	if tlsCfg.Internode.Server.CertFile == "" && tlsCfg.Internode.Server.CertData == "" {
		return nil, nil
	}
	base, err := encryption.NewTLSConfigProviderFromConfig(tlsCfg, metrics.NoopMetricsHandler, logger, nil)
	if err != nil {
		return nil, err
	}
	return &internodeOnlyProvider{TLSConfigProvider: base, peers: internodePeerNames()}, nil
}

func (p *internodeOnlyProvider) GetInternodeServerConfig() (*tls.Config, error) {
	c, err := p.TLSConfigProvider.GetInternodeServerConfig()
	if err != nil || c == nil {
		return c, err
	}
	c = c.Clone()
	inner := c.GetConfigForClient
	c.VerifyConnection = p.verify
	if inner != nil {
		// The provider answers each connection with a fresh config (certificates read again): check there too.
		c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			per, err := inner(hello)
			if err != nil || per == nil {
				return per, err
			}
			per = per.Clone()
			per.VerifyConnection = p.verify
			return per, nil
		}
	}
	return c, nil
}

// verify runs after the chain was verified against the CA: the leaf must carry an internode name.
func (p *internodeOnlyProvider) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("internode: a client certificate is required")
	}
	cn := cs.PeerCertificates[0].Subject.CommonName
	if !p.peers[cn] {
		return fmt.Errorf("internode: the certificate of %q is not the server's own (internode listeners accept only %s); call the frontend instead", cn, strings.Join(keys(p.peers), ", "))
	}
	return nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
