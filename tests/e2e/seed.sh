# seed.sh: the seed's scenario (seeds/003), shared by test_triggers.sh (annotated workloads)
# and test_deploymentconfigs.sh (DeploymentConfigs), which must give the same answers. Sourced
# after lib.sh and registry.sh; expects REG (the registry), ALIAS (the same registry under
# another host name), NS and an apply function (kubectl apply -n $NS of a manifest).

# seed_stream NAME REPO VERSION [SCHEDULED]: VERSION imported from $REG/REPO:VERSION, latest
# follows it.
seed_stream()
{
    apply "apiVersion: image.openshift.io/v1
kind: ImageStream
metadata: {name: $1}
spec:
  tags:
  - name: \"$3\"
    from: {kind: DockerImage, name: \"$REG/$2:$3\"}
    importPolicy: {scheduled: ${4:-true}, insecure: true}
  - name: latest
    from: {kind: ImageStreamTag, name: \"$3\"}"
}

# seed_images: one image per component pushed; DB, DS, DM their digests.
seed_images()
{
    reg_build_image backend amd64
    reg_push backend "$REG/lib/backend-redis:2.7"
    reg_build_image sysredis amd64
    reg_push sysredis "$REG/lib/system-redis:2.7"
    reg_build_image mysql amd64
    reg_push mysql "$REG/lib/mysql:8.0"
    DB=$(reg_digest "$REG/lib/backend-redis:2.7")
    DS=$(reg_digest "$REG/lib/system-redis:2.7")
    DM=$(reg_digest "$REG/lib/mysql:8.0")
}

# seed_streams: the three streams (system-mysql not scheduled).
seed_streams()
{
    seed_stream backend-redis lib/backend-redis 2.7
    seed_stream system-redis lib/system-redis 2.7
    seed_stream system-mysql lib/mysql 8.0 false
}

# seed_retag: a release renames backend-redis's image: 2.7.1 is pushed at the same digest and
# latest follows it; returns once the stream says so.
seed_retag()
{
    reg_push backend "$REG/lib/backend-redis:2.7.1"
    apply "apiVersion: image.openshift.io/v1
kind: ImageStream
metadata: {name: backend-redis}
spec:
  tags:
  - name: \"2.7\"
    from: {kind: DockerImage, name: \"$REG/lib/backend-redis:2.7\"}
    importPolicy: {scheduled: true, insecure: true}
  - name: \"2.7.1\"
    from: {kind: DockerImage, name: \"$REG/lib/backend-redis:2.7.1\"}
    importPolicy: {scheduled: true, insecure: true}
  - name: latest
    from: {kind: ImageStreamTag, name: \"2.7.1\"}"
    wait_for "latest follows 2.7.1" 20 is_eq "2.7.1" kc get is -n "$NS" backend-redis \
        -o jsonpath='{.spec.tags[?(@.name=="latest")].from.name}'
}

# seed_external DIGEST: system-redis's latest follows an `external` tag reaching the same image
# (DIGEST) through $ALIAS; returns once the stream shows the alias's pull spec.
seed_external()
{
    apply "apiVersion: image.openshift.io/v1
kind: ImageStream
metadata: {name: system-redis}
spec:
  tags:
  - name: \"2.7\"
    from: {kind: DockerImage, name: \"$REG/lib/system-redis:2.7\"}
    importPolicy: {scheduled: true, insecure: true}
  - name: external
    from: {kind: DockerImage, name: \"$ALIAS/lib/system-redis:2.7\"}
    importPolicy: {insecure: true}
  - name: latest
    from: {kind: ImageStreamTag, name: external}"
    wait_for "latest now shows the alias's pull spec" 20 is_eq "$ALIAS/lib/system-redis@$1" \
        kc get is -n "$NS" system-redis \
        -o jsonpath='{.status.tags[?(@.tag=="latest")].items[0].dockerImageReference}'
}
