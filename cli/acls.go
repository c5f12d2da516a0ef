package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// aclsCommand is `petrel acls add|remove|list`, shaped like kafka-acls.sh: principals
// with --allow-principal/--deny-principal (and their hosts), operations with
// --operation, resources with --topic, --group, --cluster and --transactional-id,
// and --resource-pattern-type. The listing is kafka-acls.sh's.
func aclsCommand() *ucli.Command {
	resourceFlags := []ucli.Flag{
		&ucli.StringSliceFlag{Name: "topic", Usage: "a topic (repeatable; * is every topic)"},
		&ucli.StringSliceFlag{Name: "group", Usage: "a consumer group (repeatable; * is every group)"},
		&ucli.BoolFlag{Name: "cluster", Usage: "the cluster resource"},
		&ucli.StringSliceFlag{Name: "transactional-id", Usage: "a transactional id (repeatable; * is every id)"},
		&ucli.StringFlag{Name: "resource-pattern-type", Value: "literal",
			Usage: "literal or prefixed (list and remove also take any and match)"},
	}
	entryFlags := []ucli.Flag{
		&ucli.StringSliceFlag{Name: "allow-principal", Usage: "a principal to allow, Type:Name (repeatable)"},
		&ucli.StringSliceFlag{Name: "deny-principal", Usage: "a principal to deny, Type:Name (repeatable)"},
		&ucli.StringSliceFlag{Name: "allow-host", Usage: "a host (IP address or CIDR block, such as 10.0.0.0/8) the allowed principals may connect from (default *)"},
		&ucli.StringSliceFlag{Name: "deny-host", Usage: "a host (IP address or CIDR block) the denied principals may not connect from (default *)"},
		&ucli.StringSliceFlag{Name: "operation", Usage: "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All (repeatable)"},
	}
	return &ucli.Command{
		Name:  "acls",
		Usage: "add, remove and list ACLs, as kafka-acls.sh",
		Subcommands: []*ucli.Command{
			{Name: "add", Usage: "add ACLs", Flags: clientcmd.WithFlags(append(slices.Clone(resourceFlags), entryFlags...)...), Action: runACLsAdd},
			{Name: "remove", Usage: "remove the ACLs that match", Flags: clientcmd.WithFlags(append(slices.Clone(resourceFlags), entryFlags...)...), Action: runACLsRemove},
			{Name: "list", Usage: "list ACLs (all, or those of the named resources)", Flags: withOutputFlags(append(slices.Clone(resourceFlags),
				&ucli.StringFlag{Name: "principal", Usage: "only the ACLs of this principal"})...), Action: runACLsList},
		},
	}
}

// aclResource is one resource pattern named on the command line.
type aclResource struct {
	typ     kmsg.ACLResourceType
	name    string
	pattern kmsg.ACLResourcePatternType
}

func (r aclResource) String() string {
	return fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", r.typ, r.name, r.pattern)
}

// aclEntry is one principal, host, operation and permission.
type aclEntry struct {
	principal, host string
	op              kmsg.ACLOperation
	perm            kmsg.ACLPermissionType
}

func (e aclEntry) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s)", e.principal, e.host, e.op, e.perm)
}

func parseACLResources(c *ucli.Context, forFilter bool) ([]aclResource, error) {
	pattern, err := kmsg.ParseACLResourcePatternType(c.String("resource-pattern-type"))
	if err != nil || pattern == kmsg.ACLResourcePatternTypeUnknown ||
		(!forFilter && pattern != kmsg.ACLResourcePatternTypeLiteral && pattern != kmsg.ACLResourcePatternTypePrefixed) {
		want := "literal or prefixed"
		if forFilter {
			want = "literal, prefixed, any or match"
		}
		return nil, fmt.Errorf("--resource-pattern-type must be %s, got %q", want, c.String("resource-pattern-type"))
	}
	var out []aclResource
	add := func(t kmsg.ACLResourceType, names []string) {
		for _, n := range names {
			out = append(out, aclResource{t, n, pattern})
		}
	}
	add(kmsg.ACLResourceTypeTopic, c.StringSlice("topic"))
	add(kmsg.ACLResourceTypeGroup, c.StringSlice("group"))
	add(kmsg.ACLResourceTypeTransactionalId, c.StringSlice("transactional-id"))
	if c.Bool("cluster") {
		out = append(out, aclResource{kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral})
	}
	return out, nil
}

func parseACLEntries(c *ucli.Context) ([]aclEntry, error) {
	var ops []kmsg.ACLOperation
	for _, s := range c.StringSlice("operation") {
		op, err := kmsg.ParseACLOperation(s)
		if err != nil || op == kmsg.ACLOperationUnknown || op == kmsg.ACLOperationAny {
			return nil, fmt.Errorf("unknown --operation %q", s)
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return nil, errors.New("--operation is required")
	}
	var out []aclEntry
	for _, side := range []struct {
		principals, hosts string
		perm              kmsg.ACLPermissionType
	}{{"allow-principal", "allow-host", kmsg.ACLPermissionTypeAllow}, {"deny-principal", "deny-host", kmsg.ACLPermissionTypeDeny}} {
		hosts := c.StringSlice(side.hosts)
		if len(hosts) == 0 {
			hosts = []string{"*"}
		}
		for _, p := range c.StringSlice(side.principals) {
			if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
				return nil, fmt.Errorf("principal %q is not of the form Type:Name (User:alice)", p)
			}
			for _, h := range hosts {
				for _, op := range ops {
					out = append(out, aclEntry{p, h, op, side.perm})
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--allow-principal or --deny-principal is required")
	}
	return out, nil
}

// aclChangeArgs parses what add and remove share: the resources (filter: patterns
// "match"/"any" allowed), the principals' entries, and a connected client.
func aclChangeArgs(c *ucli.Context, filter bool) ([]aclResource, []aclEntry, *clientcmd.Client, error) {
	if _, err := clientcmd.Args(c); err != nil {
		return nil, nil, nil, err
	}
	resources, err := parseACLResources(c, filter)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(resources) == 0 {
		return nil, nil, nil, errors.New("name a resource: --topic, --group, --cluster or --transactional-id")
	}
	entries, err := parseACLEntries(c)
	if err != nil {
		return nil, nil, nil, err
	}
	cl, err := clientcmd.NewClient(c)
	if err != nil {
		return nil, nil, nil, err
	}
	return resources, entries, cl, nil
}

func runACLsAdd(c *ucli.Context) error {
	resources, entries, cl, err := aclChangeArgs(c, false)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := cl.RequestContext(c.Context)
	defer cancel()
	req := kmsg.NewPtrCreateACLsRequest()
	var out strings.Builder
	for _, r := range resources {
		fmt.Fprintf(&out, "Adding ACLs for resource `%s`: \n", r)
		for _, e := range entries {
			fmt.Fprintf(&out, " \t%s \n", e)
			a := kmsg.NewCreateACLsRequestCreation()
			a.ResourceType, a.ResourceName, a.ResourcePatternType = r.typ, r.name, r.pattern
			a.Principal, a.Host, a.Operation, a.PermissionType = e.principal, e.host, e.op, e.perm
			req.Creations = append(req.Creations, a)
		}
		out.WriteString("\n")
	}
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil {
		return fmt.Errorf("create ACLs: %w", cl.Explain(err))
	}
	for _, res := range resp.Results {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			return aclError("create ACLs", err, res.ErrorMessage)
		}
	}
	if _, err := io.WriteString(c.App.Writer, out.String()); err != nil {
		return err
	}
	return listACLs(c, cl, resources, nil)
}

func runACLsRemove(c *ucli.Context) error {
	resources, entries, cl, err := aclChangeArgs(c, true)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := cl.RequestContext(c.Context)
	defer cancel()
	req := kmsg.NewPtrDeleteACLsRequest()
	var out strings.Builder
	for _, r := range resources {
		fmt.Fprintf(&out, "Removing ACLs for resource `%s`: \n", r)
		for _, e := range entries {
			fmt.Fprintf(&out, " \t%s \n", e)
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourceName, f.ResourcePatternType = r.typ, kmsg.StringPtr(r.name), r.pattern
			f.Principal, f.Host, f.Operation, f.PermissionType = kmsg.StringPtr(e.principal), kmsg.StringPtr(e.host), e.op, e.perm
			req.Filters = append(req.Filters, f)
		}
		out.WriteString("\n")
	}
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil {
		return fmt.Errorf("delete ACLs: %w", cl.Explain(err))
	}
	for _, res := range resp.Results {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			return aclError("delete ACLs", err, res.ErrorMessage)
		}
	}
	if _, err := io.WriteString(c.App.Writer, out.String()); err != nil {
		return err
	}
	return listACLs(c, cl, resources, nil)
}

func runACLsList(c *ucli.Context) error {
	if _, err := clientcmd.Args(c); err != nil {
		return err
	}
	resources, err := parseACLResources(c, true)
	if err != nil {
		return err
	}
	var principal *string
	if p := c.String("principal"); p != "" {
		principal = &p
	}
	if _, err := jsonOutput(c); err != nil {
		return err
	}
	cl, err := clientcmd.NewClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	return listACLs(c, cl, resources, principal)
}

// listACLs prints kafka-acls.sh's "Current ACLs for resource" blocks, for the named
// resources or (none named) every resource.
func listACLs(c *ucli.Context, cl *clientcmd.Client, resources []aclResource, principal *string) error {
	ctx, cancel := cl.RequestContext(c.Context)
	defer cancel()
	type filter struct {
		typ     kmsg.ACLResourceType
		name    *string
		pattern kmsg.ACLResourcePatternType
	}
	var filters []filter
	for _, r := range resources {
		filters = append(filters, filter{r.typ, kmsg.StringPtr(r.name), r.pattern})
	}
	if len(filters) == 0 {
		filters = []filter{{kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny}}
	}
	found := map[aclResource][]aclEntry{}
	for _, f := range filters {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName, req.ResourcePatternType = f.typ, f.name, f.pattern
		req.Principal, req.Operation, req.PermissionType = principal, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, cl.Client)
		if err != nil {
			return fmt.Errorf("describe ACLs: %w", cl.Explain(err))
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return aclError("describe ACLs", err, resp.ErrorMessage)
		}
		for _, r := range resp.Resources {
			key := aclResource{r.ResourceType, r.ResourceName, r.ResourcePatternType}
			for _, a := range r.ACLs {
				e := aclEntry{a.Principal, a.Host, a.Operation, a.PermissionType}
				if !slices.Contains(found[key], e) {
					found[key] = append(found[key], e)
				}
			}
		}
	}
	keys := make([]aclResource, 0, len(found))
	for k := range found {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b aclResource) int {
		return cmp.Or(cmp.Compare(a.typ, b.typ), cmp.Compare(a.name, b.name), cmp.Compare(a.pattern, b.pattern))
	})
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	if asJSON {
		type acl struct {
			ResourceType string `json:"resource_type"`
			ResourceName string `json:"resource_name"`
			PatternType  string `json:"pattern_type"`
			Principal    string `json:"principal"`
			Host         string `json:"host"`
			Operation    string `json:"operation"`
			Permission   string `json:"permission"`
		}
		acls := []acl{}
		for _, k := range keys {
			for _, e := range found[k] {
				acls = append(acls, acl{k.typ.String(), k.name, k.pattern.String(), e.principal, e.host, e.op.String(), e.perm.String()})
			}
		}
		return writeJSON(c.App.Writer, struct {
			ACLs []acl `json:"acls"`
		}{acls})
	}
	var out strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&out, "Current ACLs for resource `%s`: \n", k)
		for _, e := range found[k] {
			fmt.Fprintf(&out, " \t%s \n", e)
		}
		out.WriteString("\n")
	}
	_, err = io.WriteString(c.App.Writer, out.String())
	return err
}

// aclError words a refused ACL request; a cluster without an authorizer
// (SECURITY_DISABLED) gets one line saying so, since ACLs would not be enforced there.
func aclError(op string, err error, message *string) error {
	if errors.Is(err, kerr.SecurityDisabled) {
		return fmt.Errorf("%s: the cluster has no authorizer (authorizer.class.name is not set), so ACLs would not be enforced", op)
	}
	return fmt.Errorf("%s: %w", op, kafkaError(err, derefString(message)))
}
