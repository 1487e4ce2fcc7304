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
	"reflect"
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
	if edit != nil {
		b = []byte(edit("kustomization.yaml", string(b)))
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
	for _, g := range k.list("configMapGenerator") {
		m.objs = append(m.objs, generatedConfigMap(t, g))
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
			if _, ok := raw["metadata"].(map[string]any); !ok {
				t.Fatalf("%s: an object without metadata: %v", r, raw)
			}
			m.objs = append(m.objs, obj(raw))
		}
	}
	for _, o := range m.objs {
		md := o["metadata"].(map[string]any)
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
	}
	return m
}

// generatedConfigMap is the ConfigMap a configMapGenerator entry of
// literals makes (the only kind used here), named without kustomize's
// hash suffix, which the entries here turn off.
func generatedConfigMap(t *testing.T, g obj) obj {
	t.Helper()
	if g.get("files") != nil || g.get("envs") != nil || g.get("options", "disableNameSuffixHash") != true {
		t.Fatalf("configMapGenerator %v: the test knows literals without a name hash only", g)
	}
	data := map[string]any{}
	for _, l := range g.get("literals").([]any) {
		k, v, ok := strings.Cut(l.(string), "=")
		if !ok {
			t.Fatalf("configMapGenerator %s: literal %q is not KEY=VALUE", g.str("name"), l)
		}
		data[k] = v
	}
	return obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": g.str("name")}, "data": data}
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
	if ns := m.find("StatefulSet", "namesrv"); ns != nil {
		checkNamesrvSet(t, ns)
	}
	// The cluster's DNS domain is one setting, the kustomization's.
	files, _ := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) != "kustomization.yaml" && bytes.Contains(b, []byte("cluster.local")) {
			t.Errorf("%s names cluster.local: the DNS domain belongs in kustomization.yaml's ledgermq-dns", f)
		}
	}
}

// checkNamesrvSet: the name servers check the ACL file of the ledgermq-acl
// Secret and keep their KV configuration in a writable directory of a
// volume of their own.
func checkNamesrvSet(t *testing.T, s obj) {
	t.Helper()
	spec := obj(s.get("spec").(map[string]any))
	c := obj(spec.get("template", "spec", "containers", 0).(map[string]any))
	flags := map[string]string{}
	for _, a := range c.get("args").([]any) {
		k, v, _ := strings.Cut(a.(string), "=")
		flags[k] = v
	}
	mounts := map[string]obj{}
	for _, vm := range c.list("volumeMounts") {
		mounts[vm.str("mountPath")] = vm
	}
	claims := map[string]bool{}
	for _, v := range spec.list("volumeClaimTemplates") {
		claims[v.str("metadata", "name")] = true
	}
	if _, ok := flags["--acl-enable"]; !ok || mounts[filepath.Dir(flags["--acl-file"])] == nil {
		t.Errorf("%s: args %v: want --acl-enable and an --acl-file on a mount (the ledgermq-acl Secret)", s.name(), flags)
	}
	kv := mounts[filepath.Dir(flags["--kv-config"])]
	if kv == nil || kv.get("readOnly") == true || !claims[kv.str("name")] {
		t.Errorf("%s: --kv-config %q: want it in a writable mount of a volume claim (mounts %v, claims %v)", s.name(), flags["--kv-config"], mounts, claims)
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
// of StatefulSet s of m: field references of the pod (metadata.name,
// metadata.namespace, the pod-index label, status.podIP 10.244.0.<10+i>),
// keys of m's ConfigMaps, Secret keys from secrets, and $(VAR) references
// to earlier variables expanded.
func podEnv(t *testing.T, m *k8sManifests, s obj, i int, secrets map[string]map[string]string) []string {
	t.Helper()
	pod := s.str("metadata", "name") + "-" + strconv.Itoa(i)
	fields := map[string]string{
		"metadata.name":      pod,
		"metadata.namespace": m.namespace,
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
		case e.get("valueFrom", "configMapKeyRef") != nil:
			cm, key := e.str("valueFrom", "configMapKeyRef", "name"), e.str("valueFrom", "configMapKeyRef", "key")
			o := m.find("ConfigMap", cm)
			if o == nil || o.get("data", key) == nil {
				t.Fatalf("%s: env %s: ConfigMap %s has no key %s", pod, e.str("name"), cm, key)
			}
			v = o.str("data", key)
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
	// app-client for clients, ledgermq-broker for the brokers' registrations
	// with the name servers.
	acl := "accounts:\n  - accessKey: app-client\n    secretKey: app-client-secret-key\n    defaultTopicPerm: PUB|SUB\n    defaultGroupPerm: PUB|SUB\n" +
		"  - accessKey: ledgermq-broker\n    secretKey: ledgermq-broker-secret\n"
	if err := os.WriteFile(filepath.Join(aclDir, "plain_acl.yml"), []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := strings.Repeat("5e", 32)
	if err := os.WriteFile(filepath.Join(secDir, "secret"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]map[string]string{
		"ledgermq-cluster-secret":  {"secret": secret},
		"ledgermq-namesrv-account": {"accessKey": "ledgermq-broker", "secretKey": "ledgermq-broker-secret"},
	}
}

// TestKubernetesBrokerConfigs: every node of every broker group (the
// second group of the README's steps included) gets a config that
// `ledgermq broker --check-config` accepts, from its ConfigMap and the
// environment of its pod, with the pod's DNS name as its client address,
// its pod IP as the store host, its ordinal as its node id and the name
// servers' account to sign registrations with; and the name servers'
// arguments, with their ACL and KV file, pass `ledgermq namesrv
// --check-config`. As shipped and with the cluster's DNS domain changed
// in the kustomization, its one setting: every name follows it.
func TestKubernetesBrokerConfigs(t *testing.T) {
	for _, domain := range []string{"cluster.local", "corp.example"} {
		t.Run(domain, func(t *testing.T) {
			checkBrokerConfigs(t, domain, func(file, text string) string {
				if file == "kustomization.yaml" {
					return strings.Replace(text, "cluster_domain=cluster.local", "cluster_domain="+domain, 1)
				}
				return secondGroup(file, text)
			})
		})
	}
}

func checkBrokerConfigs(t *testing.T, domain string, edit func(file, text string) string) {
	m := loadK8s(t, edit)
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
			for _, want := range []string{`acl="` + root + `/etc/ledgermq/acl/`, `kvConfig="` + root + `/data/`, "tls=on"} {
				if !bytes.Contains(out, []byte(want)) {
					t.Errorf("%s: namesrv --check-config lacks %s:\n%s", s.name(), want, out)
				}
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
			env := podEnv(t, m, s, i, secrets)
			cmd := exec.Command(builtBin, "broker", "--config", file, "--check-config")
			cmd.Env = append([]string{"HOME=" + root}, env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s-%d: --check-config: %v\n%s", group, i, err, out)
				continue
			}
			nodes++
			host := fmt.Sprintf("%s-%d.%s.%s.svc.%s", group, i, group, m.namespace, domain)
			for _, want := range []string{
				fmt.Sprintf(`raft.node_id .*= "n%d"`, i),
				fmt.Sprintf(`broker_name .*= "%s"`, group),
				`# effective: client address ` + regexp.QuoteMeta(host+":10911") + `, listening on 0\.0\.0\.0:10911, raft bind 0\.0\.0\.0:40911`,
				fmt.Sprintf(`# effective: store host 10\.244\.0\.%d:10911`, 10+i),
				`raft peers n0-` + regexp.QuoteMeta(group+"-0."+group+"."+m.namespace+".svc."+domain) + `:40911;n1-.*;n2-`,
				`namesrv_addr .*= "` + regexp.QuoteMeta("namesrv-0.namesrv."+m.namespace+".svc."+domain) + `:9876;`,
				`namesrv.access_key .*= "ledgermq-broker"`, `namesrv.secret_key .*= "\(set\)"`,
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

// TestKubernetesKustomizeRender: where kubectl is installed, what
// `kubectl kustomize` renders (offline: it reads only the files) is what
// loadK8s decodes, the second group of the README's steps included, so
// the other tests check what would be applied.
func TestKubernetesKustomizeRender(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	dir := t.TempDir()
	files, _ := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(secondGroup(filepath.Base(f), string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	rendered := map[string]obj{}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var raw map[string]any
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rendered[obj(raw).name()] = obj(raw)
	}
	m := loadK8s(t, secondGroup)
	if len(rendered) != len(m.objs) {
		t.Errorf("kubectl kustomize renders %d objects, loadK8s %d", len(rendered), len(m.objs))
	}
	for _, o := range m.objs {
		r := rendered[o.name()]
		// The image is renamed by the images entry (ledgermq:dev).
		for _, c := range r.list("spec", "template", "spec", "containers") {
			c["image"] = m.image
		}
		if !reflect.DeepEqual(map[string]any(r), map[string]any(o)) {
			t.Errorf("%s: kubectl kustomize renders\n%v\nloadK8s decodes\n%v", o.name(), r, o)
		}
	}
}
