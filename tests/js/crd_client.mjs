// crd_client.mjs: the official Kubernetes JavaScript client (@kubernetes/client-node 1.x) on a
// custom resource served by slipway (run by tests/e2e/test_crds_js.sh with KUBECONFIG set and
// the CronTab CRD installed): CustomObjectsApi create, get, merge patch, list and delete, a 422
// with its causes, and an informer that sees ADD, UPDATE and DELETE. Prints one line per check;
// exits 1 on the first failure.
import * as k8s from '@kubernetes/client-node';

const group = 'stable.example.com', version = 'v1', plural = 'crontabs', namespace = 'default';
let checks = 0;
function ok(cond, what, detail) {
    if (!cond) {
        console.log(`FAIL ${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`);
        process.exit(1);
    }
    checks++;
    console.log(`ok   ${what}`);
}
const until = async (fn, ms = 10000) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
        if (fn()) return true;
        await new Promise((r) => setTimeout(r, 20));
    }
    return fn();
};

const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const api = kc.makeApiClient(k8s.CustomObjectsApi);
const body = (name, replicas) => ({
    apiVersion: `${group}/${version}`, kind: 'CronTab', metadata: { name },
    spec: { cronSpec: '* * * * *', replicas },
});

// the informer first, so that it sees the create
const seen = { add: [], update: [], delete: [] };
const informer = k8s.makeInformer(kc, `/apis/${group}/${version}/namespaces/${namespace}/${plural}`,
    () => api.listNamespacedCustomObject({ group, version, namespace, plural }));
informer.on(k8s.ADD, (o) => seen.add.push(o.metadata.name));
informer.on(k8s.UPDATE, (o) => seen.update.push(`${o.metadata.name}:${o.spec.replicas}`));
informer.on(k8s.DELETE, (o) => seen.delete.push(o.metadata.name));
let stopping = false;
informer.on(k8s.ERROR, (e) => stopping || console.log(`informer error: ${e}`));
await informer.start();

const created = await api.createNamespacedCustomObject({ group, version, namespace, plural, body: body('js', 2) });
ok(created.spec.replicas === 2 && created.metadata.uid, 'CustomObjectsApi create', created);
const got = await api.getNamespacedCustomObject({ group, version, namespace, plural, name: 'js' });
ok(got.metadata.name === 'js' && got.spec.cronSpec === '* * * * *', 'get', got);
const patched = await api.patchNamespacedCustomObject(
    { group, version, namespace, plural, name: 'js', body: { spec: { replicas: 3 } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
ok(patched.spec.replicas === 3, 'merge patch', patched);
const list = await api.listNamespacedCustomObject({ group, version, namespace, plural });
ok(list.items.some((i) => i.metadata.name === 'js'), 'list', list.items.map((i) => i.metadata.name));
try {
    await api.createNamespacedCustomObject({ group, version, namespace, plural, body: body('bad', 50) });
    ok(false, 'an invalid object is refused');
} catch (e) {
    const status = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
    ok(e.code === 422 && status?.details?.causes?.[0]?.field === 'spec.replicas',
        'an invalid object: 422 with the cause at spec.replicas', { code: e.code, status });
}
ok(await until(() => seen.add.includes('js')), 'the informer saw the ADD', seen);
ok(await until(() => seen.update.includes('js:3')), 'the informer saw the UPDATE', seen);
await api.deleteNamespacedCustomObject({ group, version, namespace, plural, name: 'js' });
ok(await until(() => seen.delete.includes('js')), 'delete, and the informer saw the DELETE', seen);
stopping = true;
await informer.stop();
console.log(`# js client: ${checks} checks passed`);
process.exit(0);
