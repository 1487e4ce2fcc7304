// Package deploy holds no code: it is the home of the deployment files and
// of the tests that check them.
//
//	Dockerfile (repository root)   the image: the static binary FROM scratch,
//	                               a non-root user, no shell
//	deploy/systemd/                units of a name server and a broker node
//	                               (ledgermq-broker@NODE reads /etc/ledgermq/NODE.conf)
//	deploy/guide/                  the three-machine guide's files: on each
//	                               machine a name server and one node of each
//	                               of two broker groups (README, "Deployment")
//	deploy/kubernetes/             plain manifests with a kustomization: the
//	                               name servers and broker group broker-a as
//	                               StatefulSets (README, "Deployment")
//
// The tests: systemd-analyze verify on the units (it warns rather than
// fails on a bad key, so any output fails the test); the Dockerfile's rules
// (final stage FROM scratch, a numeric non-root USER, exec-form
// ENTRYPOINT, no remote ADD, pinned base images); every guide config as the
// binary reads it (--check-config); and the guide's whole cluster started on
// one machine, its three machines' addresses stood in by 127.0.1.1-3: both
// groups elect leaders, register with all three name servers and store
// messages. The Kubernetes manifests are decoded as kubectl apply -k would
// apply them, with the README's second group added, and every object is
// checked (Services, PodDisruptionBudgets, anti-affinity, probes, volumes,
// Secret mounts, preStop, the name servers' ACL and KV volume, the DNS
// domain set only in the kustomization); every broker pod's config, from
// its ConfigMap and the environment its pod fields and the ledgermq-dns
// ConfigMap make, passes --check-config, as do the name servers' arguments,
// with the domain as shipped and changed; every object also decodes into
// its Kubernetes API type (k8s.io/api) under the API server's strict
// decoder (sigs.k8s.io/json), so an unknown or misspelt field, a field
// given twice or a value of the wrong type fails. Where kubectl is installed,
// kubectl kustomize's rendering (offline) must equal what the tests decode.
package deploy
