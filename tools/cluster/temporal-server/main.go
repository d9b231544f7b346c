// The Temporal server of `mpf cluster up` and compose: go.temporal.io/server's temporal.NewServer
// with this project's authorizer and claim mapper (authz.go) and internode TLS (internode.go).
// Nothing of upstream's command line is kept but what those two run:
//
//	temporal-server --version
//	temporal-server --root DIR --config DIR --env NAME [--zone Z] [--allow-no-auth] start [--service NAME]...
//
// In global.authorization, the authorizer and claim mapper named "mpf" are ours; any other name is
// the server's own, so without them the binary serves as the upstream one does.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"strings"
	_ "time/tzdata" // embed tzdata as a fallback

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/headers"
	"go.temporal.io/server/common/log"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql" // the cluster's database
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"     // the server's own default
	"go.temporal.io/server/temporal"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "temporal-server: %v\n", err)
		os.Exit(1)
	}
}

// options: where the configuration is and which services to start.
type options struct {
	root, configDir, env, zone string
	allowNoAuth                bool
	services                   []string
}

type serviceList []string

func (s *serviceList) String() string     { return strings.Join(*s, ",") }
func (s *serviceList) Set(v string) error { *s = append(*s, v); return nil }

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// parseArgs reads the command line; version is true for --version.
func parseArgs(args []string) (o options, version bool, err error) {
	global := flag.NewFlagSet("temporal-server", flag.ContinueOnError)
	global.StringVar(&o.root, "root", envOr(config.EnvKeyRoot, "."), "root directory of the execution environment")
	global.StringVar(&o.configDir, "config", envOr(config.EnvKeyConfigDir, "config"), "config directory, relative to --root")
	global.StringVar(&o.env, "env", envOr(config.EnvKeyEnvironment, "development"), "runtime environment (the config file's name)")
	global.StringVar(&o.zone, "zone", envOr(config.EnvKeyAvailabilityZone, ""), "availability zone")
	global.BoolVar(&o.allowNoAuth, "allow-no-auth", os.Getenv(config.EnvKeyAllowNoAuth) == "true", "allow running without an authorizer")
	global.BoolVar(&version, "version", false, "print the server's version")
	if err = global.Parse(args); err != nil || version {
		return o, version, err
	}
	rest := global.Args()
	if len(rest) == 0 || rest[0] != "start" {
		return o, false, errors.New("the one command is start (temporal-server [flags] start [--service NAME]...)")
	}
	start := flag.NewFlagSet("start", flag.ContinueOnError)
	var services serviceList
	start.Var(&services, "service", "a service to start (repeat; default: all)")
	if err = start.Parse(rest[1:]); err != nil {
		return o, false, err
	}
	if start.NArg() > 0 {
		return o, false, fmt.Errorf("start takes no arguments (got %q); name services with --service", start.Args())
	}
	o.services = services
	if len(o.services) == 0 {
		o.services = temporal.DefaultServices
	}
	return o, false, nil
}

func run(args []string) error {
	o, version, err := parseArgs(args)
	if err != nil {
		return err
	}
	if version {
		fmt.Printf("temporal version %s\n", headers.ServerVersion)
		return nil
	}
	cfg, err := config.LoadConfig(o.env, path.Join(o.root, o.configDir), o.zone)
	if err != nil {
		return fmt.Errorf("unable to load configuration: %w", err)
	}
	logger := log.NewZapLogger(log.BuildZapLogger(cfg.Log))

	dynamicConfig := dynamicconfig.Client(dynamicconfig.NewNoopClient())
	if cfg.DynamicConfigClient != nil {
		if dynamicConfig, err = dynamicconfig.NewFileBasedClient(cfg.DynamicConfigClient, logger, temporal.InterruptCh()); err != nil {
			return fmt.Errorf("unable to create the dynamic config client: %w", err)
		}
	}
	authorizer, err := authorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return fmt.Errorf("unable to instantiate the authorizer: %w", err)
	}
	if authorization.IsNoopAuthorizer(authorizer) && !o.allowNoAuth {
		return errors.New("no authorizer configured: name one in global.authorization, or pass --allow-no-auth")
	}
	claimMapper, err := claimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return fmt.Errorf("unable to instantiate the claim mapper: %w", err)
	}
	audienceMapper, err := authorization.GetAudienceMapperFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return fmt.Errorf("unable to instantiate the audience mapper: %w", err)
	}

	serverOptions := []temporal.ServerOption{
		temporal.ForServices(o.services),
		temporal.WithConfig(cfg),
		temporal.WithDynamicConfigClient(dynamicConfig),
		temporal.WithLogger(logger),
		temporal.InterruptOn(temporal.InterruptCh()),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithAudienceGetter(func(*config.Config) authorization.JWTAudienceMapper { return audienceMapper }),
	}
	// Internode listeners accept only the server's own certificate (internode.go).
	internodeTLS, err := newInternodeOnlyProvider(cfg.Global.TLS, logger)
	if err != nil {
		return fmt.Errorf("unable to instantiate the TLS provider: %w", err)
	}
	if internodeTLS != nil {
		serverOptions = append(serverOptions, temporal.WithTLSConfigFactory(internodeTLS))
	}
	s, err := temporal.NewServer(serverOptions...)
	if err != nil {
		return fmt.Errorf("unable to create the server: %w", err)
	}
	if err := s.Start(); err != nil {
		return fmt.Errorf("unable to start the server: %w", err)
	}
	return nil // Start returns once the interrupt stopped every service
}

// authorizerFromConfig: "mpf" is authz.go's; anything else the server's own.
func authorizerFromConfig(cfg *config.Authorization) (authorization.Authorizer, error) {
	if strings.EqualFold(cfg.Authorizer, mpfName) {
		return &mpfAuthorizer{}, nil
	}
	return authorization.GetAuthorizerFromConfig(cfg)
}

// claimMapperFromConfig: "mpf" is authz.go's (Temporal's JWT claim mapper, its refusals explained); anything else the server's own.
func claimMapperFromConfig(cfg *config.Authorization, logger log.Logger) (authorization.ClaimMapper, error) {
	if strings.EqualFold(cfg.ClaimMapper, mpfName) {
		return newMpfClaimMapper(cfg, logger), nil
	}
	return authorization.GetClaimMapperFromConfig(cfg, logger)
}
