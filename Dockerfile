# The Sluice image: the gateway installed from its .deb on a Debian bookworm base, as a non-root
# user, with the SQLite store in a volume.
#   podman build --build-arg BASE=debian:bookworm-slim -t localhost/sluice .     (or docker build)
#   podman run --rm -p 8080:8080 localhost/sluice          # the embedded default (mock + env keys)
#   podman run --rm -p 8080:8080 -v ./sluice.yaml:/etc/sluice/sluice.yaml:ro -e SLUICE_MASTER_KEY=... localhost/sluice
# BASE is any bookworm image (a mirror's, or one made with debootstrap and `podman import`).
# DEB_FROM=source (the default) compiles the gateway and its console in the build stage and packs
# it with `make deb`; DEB_FROM=context takes build/dist/sluice_*.deb that `make dist` already made
# (make test-deploy uses it, so CI does not compile everything twice).
ARG BASE=debian:bookworm-slim
ARG DEB_FROM=source

FROM ${BASE} AS deb-source
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q && apt-get install -y -q --no-install-recommends \
      build-essential cmake ninja-build pkg-config dpkg-dev file ca-certificates git \
      libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev libboost-system1.81-dev \
      libssl-dev zlib1g-dev libyaml-cpp-dev libsqlite3-dev libpq-dev libhiredis-dev libre2-dev \
      libspdlog-dev libfmt-dev libcli11-dev nodejs npm
# The console's vite needs Node.js >= 20.19 and bookworm ships 18: the npm registry's node
# package (its binary is inside the package) runs the console build. Behind a TLS-intercepting
# proxy, give the build the proxy's CA bundle as a build secret: it is mounted for the npm steps
# only and never lands in a layer:
#   podman build --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt ...
RUN --mount=type=secret,id=ca,required=false \
    if [ -s /run/secrets/ca ]; then export NPM_CONFIG_CAFILE=/run/secrets/ca; fi \
 && npm install -g --no-audit --no-fund node@20
WORKDIR /src
COPY . .
RUN --mount=type=secret,id=ca,required=false cd console \
 && if [ -s /run/secrets/ca ]; then export NPM_CONFIG_CAFILE=/run/secrets/ca; fi \
 && npm ci --no-audit --no-fund && npm run build
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_TESTS=OFF -DSLUICE_BENCH=OFF \
 && cmake --build build --target sluice && cd build && cpack -G DEB && mkdir -p /out && cp sluice_*.deb /out/

FROM ${BASE} AS deb-context
COPY build/dist/sluice_*.deb /out/

FROM deb-${DEB_FROM} AS deb

FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
COPY --from=deb /out/ /tmp/sluice/
COPY deploy/docker/entrypoint.sh /usr/local/bin/sluice-entrypoint
# The package pulls in exactly its Depends. Its default config (loopback only) and the master key
# its postinst generated are dropped: a key baked into an image is every container's key. The
# entrypoint uses /etc/sluice/sluice.yaml when one is mounted, else the embedded default.
RUN apt-get update -q && apt-get install -y -q --no-install-recommends /tmp/sluice/sluice_*.deb \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /tmp/sluice /etc/sluice/sluice.env /etc/sluice/sluice.yaml \
 && groupadd --system --gid 10001 sluice \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/sluice --shell /usr/sbin/nologin sluice \
 && mkdir -p /var/lib/sluice && chown sluice:sluice /var/lib/sluice && chmod 755 /usr/local/bin/sluice-entrypoint
ENV SLUICE_LISTEN=0.0.0.0:8080
WORKDIR /var/lib/sluice
VOLUME /var/lib/sluice
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${SLUICE_LISTEN##*:} && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && head -1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/local/bin/sluice-entrypoint"]
