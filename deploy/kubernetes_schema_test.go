//go:build unix

package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	k8sjson "sigs.k8s.io/json"
)

// k8sTypes are the Go types of the Kubernetes API (k8s.io/api) of each
// apiVersion and kind the manifests may hold: an object of any other kind
// fails the schema check until its type is added here.
var k8sTypes = map[string]func() any{
	"v1/Namespace":                  func() any { return &corev1.Namespace{} },
	"v1/Service":                    func() any { return &corev1.Service{} },
	"v1/ConfigMap":                  func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                     func() any { return &corev1.Secret{} },
	"v1/ServiceAccount":             func() any { return &corev1.ServiceAccount{} },
	"apps/v1/StatefulSet":           func() any { return &appsv1.StatefulSet{} },
	"apps/v1/Deployment":            func() any { return &appsv1.Deployment{} },
	"policy/v1/PodDisruptionBudget": func() any { return &policyv1.PodDisruptionBudget{} },
}

// checkSchema decodes o into its Kubernetes API type as the API server's
// strict field validation does (kubectl apply --validate=strict): a field
// the type does not have (names match exactly), a field given twice, or a
// value of the wrong JSON type, is an error.
func checkSchema(o obj) error {
	key := o.str("apiVersion") + "/" + o.str("kind")
	newType, ok := k8sTypes[key]
	if !ok {
		return fmt.Errorf("%s: no Kubernetes type known for %s", o.name(), key)
	}
	b, err := json.Marshal(map[string]any(o))
	if err != nil {
		return fmt.Errorf("%s: %w", o.name(), err)
	}
	// The API server's decoder: field names match exactly (encoding/json
	// would take "servicename" for serviceName), and what it would drop
	// or take loosely comes back as strict errors.
	strict, err := k8sjson.UnmarshalStrict(b, newType())
	if err != nil {
		return fmt.Errorf("%s: %w", o.name(), err)
	}
	if len(strict) > 0 {
		return fmt.Errorf("%s: %w", o.name(), errors.Join(strict...))
	}
	return nil
}

// TestKubernetesManifestsSchema checks every object the kustomization
// applies, with the README's second group added, against the Kubernetes
// API's own types, offline: no unknown field, no value of the wrong type.
// A misspelt field and a port given as text are caught.
func TestKubernetesManifestsSchema(t *testing.T) {
	for _, edit := range []func(file, text string) string{nil, secondGroup} {
		m := loadK8s(t, edit)
		if len(m.objs) < 8 {
			t.Fatalf("%d objects decoded", len(m.objs))
		}
		for _, o := range m.objs {
			if err := checkSchema(o); err != nil {
				t.Error(err)
			}
		}
	}
	for _, bad := range []struct{ what, from, to string }{
		{"a misspelt field", "\n  serviceName:", "\n  servicename:"},
		{"a port as text", "containerPort: ", "containerPort: port-"},
	} {
		m := loadK8s(t, func(file, text string) string {
			if file != "broker-a.yaml" {
				return text
			}
			if !strings.Contains(text, bad.from) {
				t.Fatalf("broker-a.yaml has no %q to break", bad.from)
			}
			return strings.Replace(text, bad.from, bad.to, 1)
		})
		failed := false
		for _, o := range m.objs {
			if checkSchema(o) != nil {
				failed = true
			}
		}
		if !failed {
			t.Errorf("%s passed the schema check", bad.what)
		}
	}
}
