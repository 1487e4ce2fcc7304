//go:build unix

package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ledgermq/ledgermq/internal/tlsconf"
)

// obj is one Kubernetes object as decoded from YAML.
type obj map[string]any

// get walks a path of map keys and list indexes ("spec", "template", 0).
func (o obj) get(path ...any) any {
	var cur any = map[string]any(o)
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[k]
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			cur = l[k]
		}
	}
	return cur
}

func (o obj) str(path ...any) string { s, _ := o.get(path...).(string); return s }

func (o obj) list(path ...any) []obj {
	var out []obj
	l, _ := o.get(path...).([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, obj(m))
		}
	}
	return out
}

func (o obj) strMap(path ...any) map[string]string {
	out := map[string]string{}
	m, _ := o.get(path...).(map[string]any)
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

func (o obj) name() string { return o.str("kind") + "/" + o.str("metadata", "name") }

// k8sManifests is what `kubectl apply -k deploy/kubernetes` would apply:
// the kustomization's resources, with its namespace set on every
// namespaced object and its common labels on every object's metadata.
// (Its image override only renames; the tests check the name it matches.)
// edit, when set, rewrites a resource file's text before it is decoded.
type k8sManifests struct {
	namespace string
	image     string // the images entry's name
	objs      []obj
}

func loadK8s(t *testing.T, edit func(file, text string) string) *k8sManifests {
	t.Helper()
	dir := "kubernetes"
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Decoded as plain maps (into obj, yaml would make every nested map
	// an obj too).
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	k := obj(raw)
	if k.str("apiVersion") != "kustomize.config.k8s.io/v1beta1" || k.str("kind") != "Kustomization" {
		t.Fatalf("kustomization.yaml: apiVersion %q kind %q", k.str("apiVersion"), k.str("kind"))
	}
	m := &k8sManifests{namespace: k.str("namespace")}
	if imgs := k.list("images"); len(imgs) == 1 {
		m.image = imgs[0].str("name")
	}
	var listed []string
	for _, r := range k.get("resources").([]any) {
		listed = append(listed, r.(string))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" && !slices.Contains(listed, base) {
			t.Errorf("%s is not among the kustomization's resources %v", base, listed)
		}
	}
	labels := map[string]any{}
	for _, l := range k.list("labels") {
		for key, v := range l.strMap("pairs") {
			labels[key] = v
		}
	}
	for _, r := range listed {
		text, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatal(err)
		}
		s := string(text)
		if edit != nil {
			s = edit(r, s)
		}
		dec := yaml.NewDecoder(strings.NewReader(s))
		for {
			var raw map[string]any
			err := dec.Decode(&raw)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			if raw == nil {
				continue
			}
			o := obj(raw)
			md, _ := o["metadata"].(map[string]any)
			if md == nil {
				t.Fatalf("%s: an object without metadata: %v", r, o)
			}
			if o.str("kind") != "Namespace" && m.namespace != "" {
				md["namespace"] = m.namespace
			}
			ls, _ := md["labels"].(map[string]any)
			if ls == nil {
				ls = map[string]any{}
				md["labels"] = ls
			}
			for key, v := range labels {
				ls[key] = v
			}
			m.objs = append(m.objs, o)
		}
	}
	return m
}

func (m *k8sManifests) find(kind, name string) obj {
	for _, o := range m.objs {
		if o.str("kind") == kind && o.str("metadata", "name") == name {
			return o
		}
	}
	return nil
}

func (m *k8sManifests) all(kind string) []obj {
	var out []obj
	for _, o := range m.objs {
		if o.str("kind") == kind {
			out = append(out, o)
		}
	}
	return out
}

// subset reports whether every label of sel is in labels.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// secondGroup is the README's recipe for adding a group: broker-a.yaml
// with every "broker-a" made "broker-b", listed in the kustomization.
func secondGroup(file, text string) string {
	switch file {
	case "broker-a.yaml":
		return text + "---\n" + strings.ReplaceAll(text, "broker-a", "broker-b")
	}
	return text
}

// TestKubernetesManifests checks every object the kustomization applies,
// with the second group of the README's scale-out steps added: required
// fields; each StatefulSet's headless Service, PodDisruptionBudget
// (maxUnavailable 1), anti-affinity, probes on the HTTP port, Prometheus
// annotations, volumes and Secret mounts; brokers' volume claims, preStop
// and grace period.
func TestKubernetesManifests(t *testing.T) {
	m := loadK8s(t, secondGroup)
	if m.namespace == "" || m.find("Namespace", m.namespace) == nil {
		t.Errorf("kustomization namespace %q has no Namespace object", m.namespace)
	}
	if m.image != "ledgermq" {
		t.Errorf("kustomization images: %q, want the name the containers use, ledgermq", m.image)
	}
	seen := map[string]bool{}
	for _, o := range m.objs {
		if o.str("apiVersion") == "" || o.str("kind") == "" || o.str("metadata", "name") == "" {
			t.Errorf("object without apiVersion, kind or name: %v", o)
		}
		if seen[o.name()] {
			t.Errorf("%s twice", o.name())
		}
		seen[o.name()] = true
		if o.str("metadata", "labels", "app.kubernetes.io/part-of") != "ledgermq" {
			t.Errorf("%s: no part-of label", o.name())
		}
	}
	sets := m.all("StatefulSet")
	var groups []string
	for _, s := range sets {
		if s.str("apiVersion") != "apps/v1" {
			t.Errorf("%s: apiVersion %s", s.name(), s.str("apiVersion"))
		}
		checkStatefulSet(t, m, s)
		if s.str("spec", "template", "metadata", "labels", "app.kubernetes.io/component") == "broker" {
			checkBrokerSet(t, s)
			groups = append(groups, s.str("metadata", "name"))
		}
	}
	if m.find("StatefulSet", "namesrv") == nil || !slices.Equal(groups, []string{"broker-a", "broker-b"}) {
		t.Errorf("StatefulSets: name server %v, broker groups %v (want broker-a and the README's broker-b)", m.find("StatefulSet", "namesrv") != nil, groups)
	}
	if c := m.find("Service", "namesrv-client"); c == nil || c.str("spec", "clusterIP") == "None" {
		t.Error("no load-balanced name server Service for clients")
	}
}

// checkStatefulSet checks what every StatefulSet here must have.
func checkStatefulSet(t *testing.T, m *k8sManifests, s obj) {
	t.Helper()
	name := s.name()
	spec := obj(s.get("spec").(map[string]any))
	podLabels := spec.strMap("template", "metadata", "labels")
	sel := spec.strMap("selector", "matchLabels")
	if !subset(sel, podLabels) {
		t.Errorf("%s: selector %v does not select its pods %v", name, sel, podLabels)
	}
	if r, _ := spec.get("replicas").(int); r != 3 {
		t.Errorf("%s: replicas %v, want 3", name, spec.get("replicas"))
	}
	if spec.str("podManagementPolicy") != "Parallel" || spec.str("updateStrategy", "type") != "RollingUpdate" {
		t.Errorf("%s: podManagementPolicy %q updateStrategy %q: want Parallel (a group elects only with its peers up) and RollingUpdate",
			name, spec.str("podManagementPolicy"), spec.str("updateStrategy", "type"))
	}
	svc := m.find("Service", spec.str("serviceName"))
	if svc == nil || svc.str("spec", "clusterIP") != "None" || svc.get("spec", "publishNotReadyAddresses") != true ||
		!subset(svc.strMap("spec", "selector"), podLabels) {
		t.Errorf("%s: serviceName %q is not a headless Service publishing not-ready pods and selecting them", name, spec.str("serviceName"))
	}
	var pdb obj
	for _, p := range m.all("PodDisruptionBudget") {
		if subset(p.strMap("spec", "selector", "matchLabels"), podLabels) {
			if pdb != nil {
				t.Errorf("%s: two PodDisruptionBudgets", name)
			}
			pdb = p
		}
	}
	if pdb == nil || pdb.str("apiVersion") != "policy/v1" || pdb.get("spec", "maxUnavailable") != 1 || pdb.get("spec", "minAvailable") != nil {
		t.Errorf("%s: want one policy/v1 PodDisruptionBudget of maxUnavailable 1, got %v", name, pdb)
	}
	aa := spec.list("template", "spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
	if len(aa) != 1 || aa[0].str("topologyKey") != "kubernetes.io/hostname" || !subset(aa[0].strMap("labelSelector", "matchLabels"), podLabels) {
		t.Errorf("%s: want required anti-affinity of its own pods per kubernetes.io/hostname, got %v", name, aa)
	}
	pod := obj(spec.get("template", "spec").(map[string]any))
	if pod.get("securityContext", "runAsNonRoot") != true || pod.get("securityContext", "runAsUser") != 65532 || pod.get("securityContext", "fsGroup") != 65532 {
		t.Errorf("%s: pod securityContext %v: want runAsNonRoot, the image's uid 65532, fsGroup 65532 (volumes and Secrets readable)", name, pod.get("securityContext"))
	}
	cs := pod.list("containers")
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers", name, len(cs))
	}
	c := cs[0]
	if c.str("image") != m.image {
		t.Errorf("%s: image %q, want %q (the kustomization's images entry)", name, c.str("image"), m.image)
	}
	if c.get("securityContext", "readOnlyRootFilesystem") != true || c.get("securityContext", "allowPrivilegeEscalation") != false {
		t.Errorf("%s: container securityContext %v", name, c.get("securityContext"))
	}
	httpPort := 0
	for _, p := range c.list("ports") {
		if p.str("name") == "http" {
			httpPort, _ = p.get("containerPort").(int)
		}
	}
	if httpPort == 0 {
		t.Fatalf("%s: no container port named http", name)
	}
	for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/livez"} {
		if c.str(probe, "httpGet", "path") != path || c.str(probe, "httpGet", "port") != "http" {
			t.Errorf("%s: %s %v, want GET %s on the http port", name, probe, c.get(probe), path)
		}
	}
	ann := spec.strMap("template", "metadata", "annotations")
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != strconv.Itoa(httpPort) || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("%s: Prometheus annotations %v, want scrape of /metrics on %d", name, ann, httpPort)
	}
	volumes := map[string]obj{}
	for _, v := range pod.list("volumes") {
		volumes[v.str("name")] = v
	}
	for _, v := range spec.list("volumeClaimTemplates") {
		volumes[v.str("metadata", "name")] = v
	}
	mounted := map[string]bool{}
	for _, vm := range c.list("volumeMounts") {
		if volumes[vm.str("name")] == nil {
			t.Errorf("%s: mount %s has no volume", name, vm.str("name"))
		}
		mounted[vm.str("name")] = true
	}
	for v := range volumes {
		if !mounted[v] {
			t.Errorf("%s: volume %s is not mounted", name, v)
		}
	}
	// The Secrets (README, "Deployment") at the paths the configs and
	// arguments name, as k8sSecrets lays them out.
	secretAt := map[string]string{"ledgermq-tls": "/etc/ledgermq/tls", "ledgermq-acl": "/etc/ledgermq/acl", "ledgermq-cluster-secret": "/etc/ledgermq/cluster-secret"}
	mountPaths := map[string]string{}
	for _, vm := range c.list("volumeMounts") {
		mountPaths[vm.str("name")] = vm.str("mountPath")
	}
	for _, v := range pod.list("volumes") {
		if sn := v.str("secret", "secretName"); sn != "" && (secretAt[sn] == "" || mountPaths[v.str("name")] != secretAt[sn]) {
			t.Errorf("%s: Secret %s mounted at %q, want %q", name, sn, mountPaths[v.str("name")], secretAt[sn])
		}
		if v.get("secret") != nil && v.get("secret", "defaultMode") != 0o440 {
			t.Errorf("%s: Secret volume %s mode %v: want 0440 (readable by fsGroup, not by others)", name, v.str("name"), v.get("secret", "defaultMode"))
		}
	}
}

// checkBrokerSet checks a broker group's StatefulSet beyond the common.
func checkBrokerSet(t *testing.T, s obj) {
	t.Helper()
	name := s.name()
	pod := obj(s.get("spec", "template", "spec").(map[string]any))
	c := pod.list("containers")[0]
	if c.get("lifecycle", "preStop") == nil {
		t.Errorf("%s: no preStop", name)
	}
	// SIGTERM's hand-over (four election timeouts) and the broker's close
	// (15 s) fit in the grace period.
	if g, _ := pod.get("terminationGracePeriodSeconds").(int); g < 45 {
		t.Errorf("%s: terminationGracePeriodSeconds %v: too short for the hand-over", name, pod.get("terminationGracePeriodSeconds"))
	}
	if c.str("startupProbe", "httpGet", "path") != "/livez" {
		t.Errorf("%s: no startupProbe: liveness would kill a node recovering a large store", name)
	}
	vcts := obj(s.get("spec").(map[string]any)).list("volumeClaimTemplates")
	if len(vcts) != 1 || vcts[0].str("metadata", "name") != "data" || vcts[0].str("spec", "resources", "requests", "storage") == "" ||
		!slices.Contains(vcts[0].get("spec", "accessModes").([]any), any("ReadWriteOnce")) {
		t.Errorf("%s: volumeClaimTemplates %v: want one ReadWriteOnce claim named data with a size", name, vcts)
	}
	mounts := map[string]string{}
	for _, vm := range c.list("volumeMounts") {
		mounts[vm.str("name")] = vm.str("mountPath")
	}
	secrets := map[string]string{}
	for _, v := range pod.list("volumes") {
		if n := v.str("secret", "secretName"); n != "" {
			secrets[v.str("name")] = n
		}
	}
	if mounts["data"] != "/data" || secrets["tls"] != "ledgermq-tls" || secrets["acl"] != "ledgermq-acl" {
		t.Errorf("%s: mounts %v secrets %v: want data at /data, the TLS and ACL Secrets", name, mounts, secrets)
	}
}

// podEnv is the environment Kubernetes gives the container of ordinal i
// of StatefulSet s in namespace ns: field references of the pod
// (metadata.name, metadata.namespace, the pod-index label, status.podIP
// 10.244.0.<10+i>), Secret keys from secrets, and $(VAR) references to
// earlier variables expanded.
func podEnv(t *testing.T, s obj, ns string, i int, secrets map[string]map[string]string) []string {
	t.Helper()
	pod := s.str("metadata", "name") + "-" + strconv.Itoa(i)
	fields := map[string]string{
		"metadata.name":      pod,
		"metadata.namespace": ns,
		"metadata.labels['apps.kubernetes.io/pod-index']": strconv.Itoa(i),
		"status.podIP": fmt.Sprintf("10.244.0.%d", 10+i),
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	vals := map[string]string{}
	var env []string
	for _, e := range s.list("spec", "template", "spec", "containers", 0, "env") {
		var v string
		switch {
		case e.get("valueFrom", "fieldRef") != nil:
			f := e.str("valueFrom", "fieldRef", "fieldPath")
			var ok bool
			if v, ok = fields[f]; !ok {
				t.Fatalf("%s: env %s: field %s is not one a pod has", pod, e.str("name"), f)
			}
		case e.get("valueFrom", "secretKeyRef") != nil:
			sec, key := e.str("valueFrom", "secretKeyRef", "name"), e.str("valueFrom", "secretKeyRef", "key")
			var ok bool
			if v, ok = secrets[sec][key]; !ok {
				t.Fatalf("%s: env %s: Secret %s key %s unknown to the test", pod, e.str("name"), sec, key)
			}
		default:
			v = ref.ReplaceAllStringFunc(e.str("value"), func(r string) string {
				name := ref.FindStringSubmatch(r)[1]
				if x, ok := vals[name]; ok {
					return x
				}
				t.Errorf("%s: env %s refers to %s, not defined before it", pod, e.str("name"), name)
				return r
			})
		}
		vals[e.str("name")] = v
		env = append(env, e.str("name")+"="+v)
	}
	return env
}

// k8sSecrets writes the Secrets the manifests expect (README,
// "Deployment") under root, each in the directory of its mount path, and
// returns their keys for environment references.
func k8sSecrets(t *testing.T, root string) map[string]map[string]string {
	t.Helper()
	tlsDir := filepath.Join(root, "etc/ledgermq/tls")
	aclDir := filepath.Join(root, "etc/ledgermq/acl")
	secDir := filepath.Join(root, "etc/ledgermq/cluster-secret")
	for _, d := range []string{tlsDir, aclDir, secDir, filepath.Join(root, "data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := tlsconf.NewCA("ledgermq test CA")
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteCA(filepath.Join(tlsDir, "ca.crt")); err != nil {
		t.Fatal(err)
	}
	if err := ca.Issue("ledgermq", filepath.Join(tlsDir, "tls.crt"), filepath.Join(tlsDir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	acl := "accounts:\n  - accessKey: app1\n    secretKey: app1-secret-key\n    defaultTopicPerm: PUB|SUB\n    defaultGroupPerm: PUB|SUB\n"
	if err := os.WriteFile(filepath.Join(aclDir, "plain_acl.yml"), []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := strings.Repeat("5e", 32)
	if err := os.WriteFile(filepath.Join(secDir, "secret"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]map[string]string{"ledgermq-cluster-secret": {"secret": secret}}
}

// TestKubernetesBrokerConfigs: every node of every broker group (the
// second group of the README's steps included) gets a config that
// `ledgermq broker --check-config` accepts, from its ConfigMap and the
// environment of its pod, with the pod's DNS name as its client address,
// its pod IP as the store host and its ordinal as its node id; and the
// name servers' arguments pass `ledgermq namesrv --check-config`.
func TestKubernetesBrokerConfigs(t *testing.T) {
	m := loadK8s(t, secondGroup)
	root := t.TempDir()
	secrets := k8sSecrets(t, root)
	// The absolute paths of the manifests, under root here.
	rooted := func(s string) string {
		return regexp.MustCompile(`(^|[=\s])(/etc/ledgermq/|/data\b)`).ReplaceAllString(s, "${1}"+root+"${2}")
	}
	nodes := 0
	for _, s := range m.all("StatefulSet") {
		c := obj(s.get("spec", "template", "spec", "containers", 0).(map[string]any))
		args := c.get("args").([]any)
		if s.str("spec", "template", "metadata", "labels", "app.kubernetes.io/component") == "namesrv" {
			cmdArgs := []string{}
			for _, a := range args {
				cmdArgs = append(cmdArgs, rooted(a.(string)))
			}
			out, err := exec.Command(builtBin, append(cmdArgs, "--check-config")...).CombinedOutput()
			if err != nil {
				t.Errorf("%s: namesrv %v: %v\n%s", s.name(), cmdArgs, err, out)
			}
			continue
		}
		group := s.str("metadata", "name")
		if len(args) != 3 || args[0] != "broker" || args[1] != "--config" {
			t.Fatalf("%s: args %v, want broker --config FILE", s.name(), args)
		}
		confPath := args[2].(string)
		var cmName, mountPath string
		for _, vm := range c.list("volumeMounts") {
			if strings.HasPrefix(confPath, vm.str("mountPath")+"/") {
				mountPath = vm.str("mountPath")
				for _, v := range s.list("spec", "template", "spec", "volumes") {
					if v.str("name") == vm.str("name") {
						cmName = v.str("configMap", "name")
					}
				}
			}
		}
		cm := m.find("ConfigMap", cmName)
		if cm == nil {
			t.Fatalf("%s: %s is not on a ConfigMap volume", s.name(), confPath)
		}
		file := filepath.Join(root, confPath)
		if err := os.MkdirAll(filepath.Join(root, mountPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(rooted(cm.str("data", filepath.Base(confPath)))), 0o644); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			env := podEnv(t, s, m.namespace, i, secrets)
			cmd := exec.Command(builtBin, "broker", "--config", file, "--check-config")
			cmd.Env = append([]string{"HOME=" + root}, env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s-%d: --check-config: %v\n%s", group, i, err, out)
				continue
			}
			nodes++
			host := fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local", group, i, group, m.namespace)
			for _, want := range []string{
				fmt.Sprintf(`raft.node_id .*= "n%d"`, i),
				fmt.Sprintf(`broker_name .*= "%s"`, group),
				`# effective: client address ` + regexp.QuoteMeta(host+":10911") + `, listening on 0\.0\.0\.0:10911, raft bind 0\.0\.0\.0:40911`,
				fmt.Sprintf(`# effective: store host 10\.244\.0\.%d:10911`, 10+i),
				`raft peers n0-` + regexp.QuoteMeta(group+"-0."+group+"."+m.namespace) + `\.svc\.cluster\.local:40911;n1-.*;n2-`,
				`tls.enable .*= "true"`, `acl_enable .*= "true"`, `cluster_secret .*= "\(set\)"`,
				`http_addr .*= "0\.0\.0\.0:10913"`,
			} {
				if !regexp.MustCompile(want).Match(out) {
					t.Errorf("%s-%d: --check-config lacks %s:\n%s", group, i, want, out)
				}
			}
			if bytes.Contains(out, []byte("# ignored")) {
				t.Errorf("%s-%d: ignored settings:\n%s", group, i, out)
			}
		}
	}
	if nodes != 6 {
		t.Errorf("%d broker nodes checked, want 6 (two groups of three)", nodes)
	}
}
