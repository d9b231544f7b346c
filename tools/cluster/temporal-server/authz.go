// The authorisation of merchant-payment-flows' Temporal API: Temporal's own JWT claim mapper
// (a token signed by a key of the identity provider's JWKS, for the configured audience, its
// `permissions` claim read as `<namespace>:read|write|worker|admin`) and an authorizer that gives
// those four roles the meanings the project's operators need:
//
//	read    list, describe, query, read history; nothing that changes a flow.
//	write   what a gateway does: start, signal, signal-with-start, update, query, and read.
//	        Not terminate, cancel, reset, delete, batch or the options/activity changes: those
//	        are a person's decisions (Temporal's default authorizer lets write do them all).
//	worker  what a worker does: poll task queues, complete, fail and heartbeat tasks, answer
//	        queries, shut down, describe its namespace. Nothing else (a worker that also starts
//	        or signals flows holds write too).
//	admin   on a namespace: the operator, who may do everything above plus terminate, cancel,
//	        reset, delete, run batches. On `temporal-system` (the whole cluster): the
//	        administrator, the only one who may change namespaces, search attributes, clusters.
//
// Every call it lets through that records an identity in a flow's history (terminate, cancel,
// signal, update, start, reset…) records the token's subject first: `operator (temporal-cli:…)`,
// whatever identity the client claimed, so an action is tied to the person who signed in.
// Workers' task calls keep their own identity (which worker did what).
//
// Every refusal (PERMISSION_DENIED) says who was refused, what they hold and what the call needs
// (the server is run with frontend.exposeAuthorizerErrors so the caller sees it); a missing,
// expired, forged or other-issuer token is UNAUTHENTICATED with its reason, never let through
// and never a 500.
package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/server/common/api"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The names under global.authorization.authorizer and .claimMapper that select these.
const mpfName = "mpf"

// tokenProblem is what the claim mapper found wrong with a token (Claims.Extensions): the
// authorizer refuses every call but health checks with it.
type tokenProblem struct{ reason string }

type mpfClaimMapper struct{ jwt authorization.ClaimMapper }

var _ authorization.ClaimMapper = (*mpfClaimMapper)(nil)
var _ authorization.ClaimMapperWithAuthInfoRequired = (*mpfClaimMapper)(nil)

func newMpfClaimMapper(cfg *config.Authorization, logger log.Logger) authorization.ClaimMapper {
	return &mpfClaimMapper{jwt: authorization.NewDefaultJWTClaimMapper(authorization.NewDefaultTokenKeyProvider(cfg, logger), cfg, logger)}
}

// GetClaims verifies the token with Temporal's own JWT claim mapper. A token it refuses becomes
// claims carrying the reason (the interceptor would answer a bare "Request unauthorized." to an
// error from here); they hold no role.
func (m *mpfClaimMapper) GetClaims(authInfo *authorization.AuthInfo) (*authorization.Claims, error) {
	if authInfo.AuthToken == "" {
		return &authorization.Claims{Extensions: tokenProblem{"no access token: every call needs one from the identity provider (Authorization: Bearer <token>; TEMPORAL_API_KEY for the temporal CLI and mpf); a client certificate identifies a component, it grants nothing"}}, nil
	}
	claims, err := m.jwt.GetClaims(authInfo)
	if err != nil {
		return &authorization.Claims{Extensions: tokenProblem{"access token refused (" + describeTokenError(err) + "): sign in again, or check that it comes from this cluster's identity provider for its audience"}}, nil
	}
	if claims.Subject == "" {
		return &authorization.Claims{Extensions: tokenProblem{"access token refused (no subject)"}}, nil
	}
	return claims, nil
}

// AuthInfoRequired false: a call with neither certificate nor token still reaches the authorizer,
// which refuses it naming what is missing.
func (m *mpfClaimMapper) AuthInfoRequired() bool { return false }

// describeTokenError turns the JWT library's errors into a short reason, never echoing the token.
func describeTokenError(err error) string {
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "expired"):
		return "expired"
	case strings.Contains(msg, "key not found"), strings.Contains(msg, "no \"kid\""):
		return "not signed by a key of this cluster's identity provider: another issuer, or a key it no longer publishes"
	case strings.Contains(msg, "verification error"), strings.Contains(msg, "signature"):
		return "its signature does not verify: forged or altered"
	case strings.Contains(msg, "audience"):
		return "issued for another audience, not this Temporal API"
	case strings.Contains(msg, "not valid yet"), strings.Contains(msg, "used before issued"):
		return "not valid yet"
	case strings.Contains(msg, "malformed"), strings.Contains(msg, "format"), strings.Contains(msg, "segments"):
		return "not a JWT bearer token"
	default:
		return "invalid"
	}
}

type mpfAuthorizer struct{}

var _ authorization.Authorizer = (*mpfAuthorizer)(nil)

// Calls that change a flow in ways only a person decides: the operator's (admin on the namespace).
var operatorActions = set(
	"TerminateWorkflowExecution", "RequestCancelWorkflowExecution", "ResetWorkflowExecution", "DeleteWorkflowExecution",
	"StartBatchOperation", "StopBatchOperation", "UpdateWorkflowExecutionOptions",
	"PauseActivity", "UnpauseActivity", "ResetActivity", "UpdateActivityOptions",
	"CreateWorkflowRule", "DeleteWorkflowRule", "TriggerWorkflowRule",
)

// What a worker does with its task queues: the worker role's (and the operator's, the administrator's).
var workerTasks = set(
	"PollWorkflowTaskQueue", "RespondWorkflowTaskCompleted", "RespondWorkflowTaskFailed",
	"PollActivityTaskQueue", "RecordActivityTaskHeartbeat", "RecordActivityTaskHeartbeatById",
	"RespondActivityTaskCompleted", "RespondActivityTaskCompletedById", "RespondActivityTaskFailed",
	"RespondActivityTaskFailedById", "RespondActivityTaskCanceled", "RespondActivityTaskCanceledById",
	"PollNexusTaskQueue", "RespondNexusTaskCompleted", "RespondNexusTaskFailed",
	"RespondQueryTaskCompleted", "ResetStickyTaskQueue", "ShutdownWorker", "RecordWorkerHeartbeat",
)

// Reads a worker makes when it starts (besides the health check), allowed to the worker role.
var workerReads = set("DescribeNamespace", "GetWorkerBuildIdCompatibility", "GetWorkerVersioningRules", "FetchWorkerConfig")

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func deny(format string, a ...any) (authorization.Result, error) {
	return authorization.Result{Decision: authorization.DecisionDeny}, serviceerror.NewPermissionDenied(fmt.Sprintf(format, a...), "")
}

func unauthenticated(format string, a ...any) (authorization.Result, error) {
	return authorization.Result{Decision: authorization.DecisionDeny}, status.Error(codes.Unauthenticated, fmt.Sprintf(format, a...))
}

var allow = authorization.Result{Decision: authorization.DecisionAllow}

func roleNames(r authorization.Role) string {
	var n []string
	for _, x := range []struct {
		r    authorization.Role
		name string
	}{{authorization.RoleWorker, "worker"}, {authorization.RoleReader, "read"}, {authorization.RoleWriter, "write"}, {authorization.RoleAdmin, "admin"}} {
		if r&x.r != 0 {
			n = append(n, x.name)
		}
	}
	if len(n) == 0 {
		return "no role"
	}
	sort.Strings(n)
	return strings.Join(n, "+")
}

func (a *mpfAuthorizer) Authorize(_ context.Context, claims *authorization.Claims, target *authorization.CallTarget) (authorization.Result, error) {
	if authorization.IsHealthCheckAPI(target.APIName) {
		return allow, nil
	}
	method := target.APIName[strings.LastIndex(target.APIName, "/")+1:]
	// Who the caller is could not be established: UNAUTHENTICATED (Temporal Web then signs the
	// person in again; an SDK's caller sees the reason).
	if claims == nil {
		return unauthenticated("%s refused: no access token (every call needs one from the identity provider)", method)
	}
	if p, ok := claims.Extensions.(tokenProblem); ok {
		return unauthenticated("%s refused: %s", method, p.reason)
	}
	md := api.GetMethodMetadata(target.APIName)
	var res authorization.Result
	var err error
	workflowService := strings.HasPrefix(target.APIName, api.WorkflowServicePrefix)
	switch md.Scope {
	case api.ScopeCluster:
		res, err = clusterCall(claims, method, md.Access)
	case api.ScopeNamespace:
		res, err = namespaceCall(claims, method, target.Namespace, md.Access, workflowService)
	default:
		return deny("%s refused to %s: an API this server does not open to tokens", method, claims.Subject)
	}
	if err == nil && res.Decision == authorization.DecisionAllow && workflowService && !workerTasks[method] {
		stampIdentity(target.Request, claims.Subject)
	}
	return res, err
}

// stampIdentity sets a request's `identity` field (the one its history event records) to the
// token's subject, followed by what the client said in brackets.
func stampIdentity(req any, subject string) {
	// No subject: the server's own internal frontend (its system workflows, no token), left as it is.
	if subject == "" {
		return
	}
	m, ok := req.(proto.Message)
	if !ok || m == nil {
		return
	}
	r := m.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("identity")
	if fd == nil || fd.Kind() != protoreflect.StringKind || fd.IsList() {
		return
	}
	said := r.Get(fd).String()
	stamped := subject
	if said != "" && said != subject {
		stamped = subject + " (" + said + ")"
	}
	r.Set(fd, protoreflect.ValueOfString(stamped))
}

const readers = authorization.RoleReader | authorization.RoleWriter | authorization.RoleAdmin

func clusterCall(claims *authorization.Claims, method string, access api.Access) (authorization.Result, error) {
	sys := claims.System
	switch {
	case sys&authorization.RoleAdmin != 0:
		return allow, nil
	case access == api.AccessReadOnly:
		// Cluster-wide reads (namespaces, search attributes, cluster info): anyone who may read a namespace.
		if sys&readers != 0 {
			return allow, nil
		}
		for _, r := range claims.Namespaces {
			if r&readers != 0 {
				return allow, nil
			}
		}
		return deny("%s refused to %s: it holds no read, write or admin role on any namespace", method, claims.Subject)
	case access == api.AccessWrite && sys&authorization.RoleWriter != 0:
		return allow, nil
	}
	return deny("%s refused to %s (cluster: %s): it needs admin on the whole cluster (permission \"temporal-system:admin\", the administrator's)", method, claims.Subject, roleNames(sys))
}

func namespaceCall(claims *authorization.Claims, method, ns string, access api.Access, workflowService bool) (authorization.Result, error) {
	role := claims.System | claims.Namespaces[ns]
	holds := fmt.Sprintf("%s (namespace %q: %s)", claims.Subject, ns, roleNames(role))
	need := func(what, perm string) (authorization.Result, error) {
		return deny("%s refused to %s: it needs %s (permission %q)", method, holds, what, perm)
	}
	switch {
	case access == api.AccessAdmin:
		// Changing a namespace itself (its settings, search attributes, deletion): the administrator's.
		if claims.System&authorization.RoleAdmin != 0 {
			return allow, nil
		}
		return need("admin on the whole cluster, the administrator's", "temporal-system:admin")
	case role&authorization.RoleAdmin != 0:
		return allow, nil
	case workflowService && operatorActions[method]:
		return need("the operator's role, admin on the namespace; write (a gateway's) and read (a viewer's) do not terminate, cancel, reset or delete flows", ns+":admin")
	case workflowService && workerTasks[method]:
		if role&authorization.RoleWorker != 0 {
			return allow, nil
		}
		return need("the worker role: only workers poll and complete tasks", ns+":worker")
	case workflowService && workerReads[method] && role&authorization.RoleWorker != 0:
		return allow, nil
	case access == api.AccessReadOnly:
		if role&readers != 0 {
			return allow, nil
		}
		return need("read on the namespace", ns+":read")
	case access == api.AccessWrite:
		if role&(authorization.RoleWriter|authorization.RoleAdmin) != 0 {
			return allow, nil
		}
		return need("write on the namespace (starting, signalling or updating flows)", ns+":write")
	}
	return need("admin on the namespace", ns+":admin")
}
