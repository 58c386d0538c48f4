# kmock broker image: `docker build -t kmock .` then
#   docker run -p 9092:9092 -p 8080:8080 -v kmock-data:/var/lib/kmock kmock
# Settings come from KAFKA_* variables (KAFKA_NUM_PARTITIONS=3), flags after the image name
# (--num-partitions 3) or a mounted properties file; see docker/entrypoint.sh for the
# container defaults. `docker run kmock topics list --bootstrap-server host:9092` runs an
# admin command instead of the broker.

# Build stage: a wheel of the project, so that the final image holds no sources or tests.
FROM python:3.11-slim AS build
WORKDIR /src
# The dependencies' wheels and the build requirements first, in a layer that only a change
# of pyproject.toml rebuilds.
COPY pyproject.toml .
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb')); print('\n'.join(p['project']['dependencies'])); print('\n'.join(p['build-system']['requires']), file=open('build.txt', 'w'))" > requirements.txt \
    && pip wheel --no-cache-dir --wheel-dir /wheels -r requirements.txt \
    && pip install --no-cache-dir -r build.txt
COPY . .
RUN pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /wheels
RUN pip install --no-index /wheels/*.whl && rm -rf /wheels \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/kmock --no-create-home kmock \
    && mkdir -p /var/lib/kmock /opt/kmock/docker \
    && chown kmock:kmock /var/lib/kmock
COPY docker/entrypoint.sh /opt/kmock/docker/entrypoint.sh
RUN chmod 0755 /opt/kmock/docker/entrypoint.sh
USER kmock
WORKDIR /var/lib/kmock
VOLUME /var/lib/kmock
# 9092: Kafka protocol. 8080: admin HTTP (/healthz, /readyz, /metrics).
EXPOSE 9092 8080
# Healthy once /readyz answers 200 (__consumer_offsets replayed); needs the admin endpoint.
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ.get('KAFKA_ADMIN_PORT', '8080'), timeout=2)"]
ENTRYPOINT ["/opt/kmock/docker/entrypoint.sh"]
