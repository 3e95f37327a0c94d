package testcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	loopback             = "127.0.0.1"
	serviceCIDR          = "10.0.0.0/24"
	kubernetesServiceIP  = "10.0.0.1"
	serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
	adminUser            = "testcluster-admin"
	contextName          = "testcluster"

	etcdTimeout       = 30 * time.Second
	apiserverTimeout  = 60 * time.Second
	nodeTimeout       = 60 * time.Second
	controllerTimeout = 60 * time.Second
	requestTimeout    = 5 * time.Second
	stopGrace         = 10 * time.Second
	tokenLifetime     = 2 * time.Hour
)

// Options configures Start.
type Options struct {
	// Pods also starts kube-controller-manager, kube-scheduler, kwok and one
	// fake Ready node, so Deployments really roll out pods.
	Pods bool
	// Dir holds certs, data and component logs; empty means a fresh temp dir
	// removed by Stop.
	Dir string
	// Log receives progress lines (nil = discard). Component stdout/stderr
	// always go to <Dir>/<component>.log.
	Log io.Writer
	// Audit makes kube-apiserver log every write request (create, update,
	// patch, delete; metadata only, one JSON event per line) to
	// Cluster.AuditLog: who wrote what, when, as the server saw it.
	Audit bool
	// NudgeDeadlines, with Pods, has the cluster make the deployment controller notice a
	// passed progress deadline within about two seconds under load (deadlines.go).
	NudgeDeadlines bool
	// Parallel, for Main, is the package's -parallel unless the command line gives one; 0
	// means 8.
	Parallel int
	// EtcdQuotaBytes, if positive, is etcd's --quota-backend-bytes in place of its 2 GiB
	// default: a bench population of large Secrets (Helm releases) needs more room than that.
	EtcdQuotaBytes int64
}

// Cluster is a running local control plane.
type Cluster struct {
	// Config authenticates as cluster-admin (a user in group system:masters,
	// with a bearer token).
	Config *rest.Config
	// Kubeconfig is the path of an admin kubeconfig file for kubectl or the
	// reloader binary.
	Kubeconfig string
	// Dir holds certificates, etcd data and one <component>.log per process.
	Dir string
	// AuditLog is the audit log's path when Options.Audit is set.
	AuditLog string
	// Writes holds the last write of each namespaced object made through Client or AdminConfig
	// (not through Config, which controllers under test use).
	Writes *WriteLog

	client    kubernetes.Interface
	admin     *rest.Config
	procs     components
	removeDir bool
	audit     bool
	etcdQuota int64 // etcd's --quota-backend-bytes; 0 keeps its default

	nudging   bool
	stopNudge context.CancelFunc // ends the deadline nudger; nil when none runs
	nudged    chan error         // the nudger's end

	stopOnce sync.Once
	stopErr  error
}

// Start runs etcd and kube-apiserver, plus the components Options.Pods asks
// for, and returns once the cluster serves requests. Processes outlive ctx;
// call Stop to end them. Binaries are built first if needed (EnsureBinaries).
// If Start fails it stops what it started and keeps Dir, whose component logs
// explain the failure; the error names the component and quotes its log.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	begin := time.Now()
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	if err := c.start(ctx, opts.Pods); err != nil {
		c.procs.stopAll()
		return nil, fmt.Errorf("start test cluster (files kept in %s): %w", c.Dir, err)
	}
	c.procs.logf("cluster ready in %s (pods: %t, dir: %s)", time.Since(begin).Round(time.Millisecond), opts.Pods, c.Dir)
	return c, nil
}

func newCluster(opts Options) (*Cluster, error) {
	c := &Cluster{Dir: opts.Dir, audit: opts.Audit, etcdQuota: opts.EtcdQuotaBytes, nudging: opts.NudgeDeadlines}
	if c.Dir == "" {
		dir, err := os.MkdirTemp("", "testcluster-")
		if err != nil {
			return nil, fmt.Errorf("create cluster dir: %w", err)
		}
		c.Dir, c.removeDir = dir, true
	} else {
		dir, err := filepath.Abs(c.Dir)
		if err != nil {
			return nil, fmt.Errorf("resolve cluster dir: %w", err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create cluster dir: %w", err)
		}
		c.Dir = dir
	}
	c.procs = components{dir: c.Dir, log: opts.Log}
	if c.procs.log == nil {
		c.procs.log = io.Discard
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, pods bool) error {
	bins, err := EnsureBinaries(ctx, c.procs.log)
	if err != nil {
		return err
	}
	certs, err := generatePKI(filepath.Join(c.Dir, "pki"))
	if err != nil {
		return err
	}
	etcdURL, err := c.startEtcd(ctx, bins)
	if err != nil {
		return err
	}
	if err := c.startAPIServer(ctx, bins, certs, etcdURL); err != nil {
		return err
	}
	if !pods {
		return nil
	}
	return c.startPodComponents(ctx, bins, certs)
}

func (c *Cluster) startEtcd(ctx context.Context, bins Binaries) (string, error) {
	begin := time.Now()
	var clientURL string
	err := c.procs.onFreePorts("etcd", 2, func(ports []int) error {
		clientURL = localURL("http", ports[0])
		peerURL := localURL("http", ports[1])
		args := []string{
			"--name", contextName,
			"--data-dir", filepath.Join(c.Dir, "etcd"),
			"--listen-client-urls", clientURL,
			"--advertise-client-urls", clientURL,
			"--listen-peer-urls", peerURL,
			"--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", contextName + "=" + peerURL,
			"--unsafe-no-fsync",
			"--log-level", "warn",
		}
		if c.etcdQuota > 0 {
			args = append(args, "--quota-backend-bytes", strconv.FormatInt(c.etcdQuota, 10))
		}
		p, err := c.procs.run("etcd", bins.Etcd, args...)
		if err != nil {
			return err
		}
		return p.waitFor(ctx, "/health", etcdTimeout, httpOK(clientURL+"/health"))
	})
	if err != nil {
		return "", err
	}
	c.procs.logf("etcd ready in %s", time.Since(begin).Round(time.Millisecond))
	return clientURL, nil
}

func (c *Cluster) startAPIServer(ctx context.Context, bins Binaries, certs pki, etcdURL string) error {
	begin := time.Now()
	token, tokenFile, err := writeTokenFile(filepath.Join(c.Dir, "pki"))
	if err != nil {
		return fmt.Errorf("start kube-apiserver: %w", err)
	}
	args := []string{
		"--etcd-servers", etcdURL,
		"--bind-address", loopback,
		"--advertise-address", loopback,
		// Nothing reaches this API server through the kubernetes Service, and from 1.37 on the
		// endpoint reconciler refuses a loopback advertise address.
		"--endpoint-reconciler-type", "none",
		"--cert-dir", filepath.Join(c.Dir, "pki"),
		"--tls-cert-file", certs.ServingCert,
		"--tls-private-key-file", certs.ServingKey,
		"--client-ca-file", certs.CACert,
		"--token-auth-file", tokenFile,
		"--authorization-mode", "RBAC",
		"--disable-admission-plugins", "ServiceAccount",
		"--service-cluster-ip-range", serviceCIDR,
		"--service-account-issuer", serviceAccountIssuer,
		"--service-account-key-file", certs.ServiceAccountKey,
		"--service-account-signing-key-file", certs.ServiceAccountKey,
		"--allow-privileged",
		"--profiling=false",
	}
	if c.audit {
		policy := filepath.Join(c.Dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return fmt.Errorf("start kube-apiserver: write audit policy: %w", err)
		}
		c.AuditLog = filepath.Join(c.Dir, "audit.log")
		args = append(args, "--audit-policy-file", policy, "--audit-log-path", c.AuditLog)
	}
	err = c.procs.onFreePorts("kube-apiserver", 1, func(ports []int) error {
		c.procs.apiserver = len(c.procs.processes)
		p, err := c.procs.run("kube-apiserver", bins.KubeAPIServer, append(args, "--secure-port", strconv.Itoa(ports[0]))...)
		if err != nil {
			return err
		}
		if err := c.connect(localURL("https", ports[0]), token, certs.CAData); err != nil {
			return err
		}
		return p.waitFor(ctx, "/readyz to return 200", apiserverTimeout, c.readyz)
	})
	if err != nil {
		return err
	}
	p := c.procs.processes[c.procs.apiserver]
	if err := p.waitFor(ctx, "namespace default", apiserverTimeout, c.namespaceExists("default")); err != nil {
		return err
	}
	c.procs.logf("kube-apiserver ready in %s", time.Since(begin).Round(time.Millisecond))
	return nil
}

// connect sets up Config, the admin client and the admin kubeconfig file.
func (c *Cluster) connect(host, token string, caData []byte) error {
	c.Config = &rest.Config{
		Host:            host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caData},
		QPS:             100,
		Burst:           200,
	}
	// The admin client has no client-side limit: the tests, run in parallel, share it.
	admin := rest.CopyConfig(c.Config)
	admin.QPS = -1
	c.Writes = &WriteLog{}
	admin.Wrap(c.Writes.wrap)
	c.admin = admin
	client, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return fmt.Errorf("create admin client: %w", err)
	}
	c.client = client
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, host, token, caData); err != nil {
		return fmt.Errorf("write admin kubeconfig: %w", err)
	}
	return nil
}

func (c *Cluster) readyz(ctx context.Context) (bool, error) {
	var code int
	err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code).Error()
	return code == http.StatusOK, err
}

func (c *Cluster) namespaceExists(name string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err == nil, err
	}
}

// Client returns a clientset authenticated as cluster-admin; its writes are kept in Writes.
func (c *Cluster) Client() kubernetes.Interface {
	return c.client
}

// AdminConfig returns a copy of Client's configuration, for other clients (dynamic ones) whose
// writes are kept in Writes too.
func (c *Cluster) AdminConfig() *rest.Config {
	return rest.CopyConfig(c.admin)
}

// ServiceAccountConfig returns a rest.Config authenticated as the
// ServiceAccount namespace/name through a TokenRequest, so the caller has
// exactly the permissions RBAC grants that account. The ServiceAccount must
// exist.
func (c *Cluster) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	req := &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: new(int64(tokenLifetime / time.Second)),
		},
	}
	resp, err := c.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request token for service account %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = resp.Status.Token
	return cfg, nil
}

// RestartAPIServer stops kube-apiserver (SIGKILL if kill, else SIGTERM with the usual grace),
// keeps it down for down, starts it again on the same port and waits until it is ready: the
// fault a client sees when the API server is upgraded or crashes. Not safe to call concurrently.
func (c *Cluster) RestartAPIServer(ctx context.Context, down time.Duration, kill bool) error {
	old := c.procs.processes[c.procs.apiserver]
	grace := stopGrace
	if kill {
		grace = 0
	}
	old.stop(grace)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	p, err := startProcess(old.name, old.binary, c.Dir, old.args...)
	if err != nil {
		return err
	}
	c.procs.processes[c.procs.apiserver] = p
	return p.waitFor(ctx, "/readyz to return 200 after a restart", apiserverTimeout, c.readyz)
}

// Stop ends every component (SIGTERM, then SIGKILL after a grace period) and
// removes Dir if Start created it. It reports components that had already
// exited on their own. Calling Stop again returns the first result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	var errs []error
	if c.stopNudge != nil {
		c.stopNudge()
		if err := <-c.nudged; err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.procs.exitedEarly()...)
	c.procs.stopAll()
	if c.removeDir {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove cluster dir: %w", err))
		}
	}
	return errors.Join(errs...)
}

// auditPolicy logs the metadata of write requests once, when the response is complete.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
- level: None
`

// writeTokenFile writes a static token file with one fresh admin token in
// group system:masters and returns the token and the file's path.
func writeTokenFile(dir string) (string, string, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", "", fmt.Errorf("generate admin token: %w", err)
	}
	token := hex.EncodeToString(buf)
	path := filepath.Join(dir, "tokens.csv")
	line := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", token, adminUser, adminUser)
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		return "", "", fmt.Errorf("write token file: %w", err)
	}
	return token, path, nil
}

func writeKubeconfig(path, host, token string, caData []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: caData}
	cfg.AuthInfos[adminUser] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: adminUser}
	cfg.CurrentContext = contextName
	return clientcmd.WriteToFile(*cfg, path)
}

func localURL(scheme string, port int) string {
	return fmt.Sprintf("%s://%s", scheme, net.JoinHostPort(loopback, strconv.Itoa(port)))
}

// httpOK reports whether a plain GET of url returns 200.
func httpOK(url string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return true, nil
	}
}
