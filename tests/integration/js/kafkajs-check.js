#!/usr/bin/env node
// kafkajs-check: drives kmock with kafkajs for the integration tests.
//
//   node kafkajs-check.js --mode MODE --brokers HOST:PORT [--topic T] [--group G] [-n N] ...
//
// Modes: metadata | create-topic | delete-topic | produce | consume | group |
//        list-groups | describe-group | group-offsets | transactions
//
// transactions: a transactional producer (--transactional-id) runs --plan, e.g.
// "commit:10,abort:10,commit:5": one transaction per step, its records valued
// "<prefix>-<step>-<i>", each step sent (and acknowledged) before it commits or aborts.
//
// It prints one JSON object per line on stdout ("produced", "consumed", "assigned",
// "cluster", "topic", ... then "done"); on failure {"event":"error",...} and exit 1.
// kafkajs's own log goes to stderr. Records are keyed "key-<i>" with value "<prefix>-<i>".
//
// Compression: kafkajs has gzip built in; snappy comes from kafkajs-snappy (the codec the
// kafkajs docs point to) and lz4/zstd from the pure-JS lz4js and zstd-codec (wasm) packages,
// wrapped below, so nothing needs a native build.
'use strict'

const { Kafka, CompressionTypes, CompressionCodecs, logLevel, AssignerProtocol } = require('kafkajs')

CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')
CompressionCodecs[CompressionTypes.LZ4] = () => {
  const lz4 = require('lz4js')
  return {
    async compress(encoder) { return Buffer.from(lz4.compress(encoder.buffer)) },
    async decompress(buffer) { return Buffer.from(lz4.decompress(buffer)) },
  }
}
let zstdReady = null
CompressionCodecs[CompressionTypes.ZSTD] = () => {
  if (!zstdReady) {
    const { ZstdCodec } = require('zstd-codec')
    zstdReady = new Promise(resolve => ZstdCodec.run(resolve))
  }
  return {
    async compress(encoder) {
      const zstd = await zstdReady
      return Buffer.from(new zstd.Simple().compress(encoder.buffer, 3))
    },
    async decompress(buffer) {
      const zstd = await zstdReady
      // Simple needs the content size in the frame header; Streaming does without.
      const out = new zstd.Simple().decompress(buffer) || new zstd.Streaming().decompress(buffer)
      if (!out) throw new Error('zstd: cannot decompress')
      return Buffer.from(out)
    },
  }
}

const CODECS = {
  none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD,
}
const HEADERS = [['trace', 't-1'], ['origin', 'kmock-über']]

function parseArgs(argv) {
  const opts = {
    mode: 'produce', brokers: '127.0.0.1:9092', topic: '', group: 'kafkajs-check', n: 10,
    prefix: 'value', compression: 'none', headers: false, idempotent: false, partitions: 3,
    hold: false, timeout: 30, start: 0, sessionTimeout: 6000, heartbeat: 1000,
    transactionalId: '', plan: '', batch: 50, delay: 0,
  }
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i].replace(/^--?/, '')
    const flag = { headers: 1, idempotent: 1, hold: 1 }
    if (flag[name]) { opts[name] = true; continue }
    const v = argv[++i]
    if (v === undefined) throw new Error(`missing value for ${argv[i - 1]}`)
    const key = name.replace(/-([a-z])/g, (_, c) => c.toUpperCase())
    if (!(key in opts)) throw new Error(`unknown option ${argv[i - 1]}`)
    opts[key] = typeof opts[key] === 'number' ? Number(v) : v
  }
  return opts
}

function emit(obj) { process.stdout.write(JSON.stringify(obj) + '\n') }

function fail(err) {
  emit({ event: 'error', error: String(err && err.stack ? err.stack : err) })
  process.exit(1)
}

const stderrLog = () => ({ namespace, label, log }) => {
  const { message, timestamp, logger, ...extra } = log
  process.stderr.write(`[kafkajs ${label}] ${namespace}: ${message} ${JSON.stringify(extra)}\n`)
}

function record(topic, partition, message) {
  const headers = Object.entries(message.headers || {}).map(([k, v]) => [k, v == null ? null : v.toString()])
  return {
    event: 'consumed', topic, partition, offset: Number(message.offset),
    key: message.key == null ? null : message.key.toString(),
    value: message.value == null ? null : message.value.toString(),
    headers,
  }
}

async function withAdmin(kafka, fn) {
  const admin = kafka.admin()
  await admin.connect()
  try { return await fn(admin) } finally { await admin.disconnect() }
}

async function produce(kafka, o) {
  const producer = kafka.producer({
    idempotent: o.idempotent, maxInFlightRequests: o.idempotent ? 1 : undefined,
    allowAutoTopicCreation: true,
  })
  await producer.connect()
  try {
    const compression = CODECS[o.compression]
    if (compression === undefined) throw new Error(`unknown --compression ${o.compression}`)
    const headers = o.headers ? Object.fromEntries(HEADERS) : undefined
    // --batch records per send (default 50), --delay ms between sends (default 0): a
    // producer that is still sending while the cluster changes.
    const batch = Number(o.batch)
    for (let i = o.start; i < o.n; i += batch) {
      if (i > o.start && Number(o.delay) > 0) await new Promise(r => setTimeout(r, Number(o.delay)))
      const messages = []
      for (let j = i; j < Math.min(i + batch, o.n); j++) {
        messages.push({ key: `key-${j}`, value: `${o.prefix}-${j}`, headers })
      }
      const result = await producer.send({ topic: o.topic, acks: -1, compression, messages })
      for (const r of result) {
        emit({ event: 'produced', partition: r.partition, error_code: r.errorCode, base_offset: Number(r.baseOffset) })
      }
    }
  } finally {
    await producer.disconnect()
  }
}

async function transactions(kafka, o) {
  const producer = kafka.producer({
    transactionalId: o.transactionalId, idempotent: true, maxInFlightRequests: 1,
    allowAutoTopicCreation: true,
  })
  await producer.connect()
  try {
    const steps = o.plan.split(',')
    for (let s = 0; s < steps.length; s++) {
      const [outcome, count] = steps[s].split(':')
      const txn = await producer.transaction()
      const messages = []
      for (let i = 0; i < Number(count); i++) {
        messages.push({ key: `key-${i}`, value: `${o.prefix}-${s}-${i}` })
      }
      await txn.send({ topic: o.topic, acks: -1, messages })
      if (outcome === 'commit') await txn.commit()
      else if (outcome === 'abort') await txn.abort()
      else throw new Error(`unknown outcome ${outcome}`)
      emit({ event: 'transaction', step: s, outcome, n: Number(count) })
    }
  } finally {
    await producer.disconnect()
  }
}

// Reads records until n arrived (or, with --hold, until stdin closes). With -n and no
// --hold, each record's offset is committed as it is handed out, so the next member of
// the group resumes exactly after the last record printed.
async function consume(kafka, o, groupId, commit) {
  const consumer = kafka.consumer({
    groupId, sessionTimeout: o.sessionTimeout, heartbeatInterval: o.heartbeat,
    maxWaitTimeInMs: 100, retry: { retries: 5 },
  })
  let crashed = null
  consumer.on(consumer.events.GROUP_JOIN, e => {
    const assigned = e.payload.memberAssignment[o.topic] || []
    emit({ event: 'assigned', member_id: e.payload.memberId, partitions: assigned })
  })
  consumer.on(consumer.events.CRASH, e => { crashed = e.payload.error })
  await consumer.connect()
  let seen = 0
  let finish
  const finished = new Promise(resolve => { finish = resolve })
  try {
    await consumer.subscribe({ topics: [o.topic], fromBeginning: true })
    await consumer.run({
      autoCommit: o.hold,
      eachMessage: async ({ topic, partition, message }) => {
        if (!o.hold && seen >= o.n) return
        emit(record(topic, partition, message))
        seen++
        if (commit) {
          const next = (BigInt(message.offset) + 1n).toString()
          await consumer.commitOffsets([{ topic, partition, offset: next }])
        }
        if (!o.hold && seen >= o.n) finish()
      },
    })
    if (o.hold) {
      process.stdin.on('end', finish)
      process.stdin.on('close', finish)
      process.stdin.resume()
    }
    const crashWatch = setInterval(() => { if (crashed) finish() }, 100)
    await finished
    clearInterval(crashWatch)
    if (crashed) throw crashed
  } finally {
    await consumer.disconnect()
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2))
  setTimeout(() => fail(new Error(`timed out after ${o.timeout} s`)), o.timeout * 1000).unref()
  const kafka = new Kafka({
    clientId: 'kmock-kafkajs', brokers: o.brokers.split(','), logLevel: logLevel.WARN,
    logCreator: stderrLog, connectionTimeout: 3000, requestTimeout: 10000,
    retry: { initialRetryTime: 100, retries: 8 },
  })
  switch (o.mode) {
    case 'metadata':
      await withAdmin(kafka, async admin => {
        const c = await admin.describeCluster()
        emit({ event: 'cluster', cluster_id: c.clusterId, controller: c.controller,
               brokers: c.brokers.map(b => ({ node_id: b.nodeId, host: b.host, port: b.port })) })
        const md = await admin.fetchTopicMetadata({ topics: [o.topic] })
        for (const t of md.topics) emit({ event: 'topic', name: t.name, partitions: t.partitions })
      })
      break
    case 'create-topic':
      await withAdmin(kafka, async admin => {
        const created = await admin.createTopics({
          topics: [{ topic: o.topic, numPartitions: o.partitions, replicationFactor: 1 }],
          waitForLeaders: true, timeout: 10000,
        })
        emit({ event: 'created', created })
        const md = await admin.fetchTopicMetadata({ topics: [o.topic] })
        for (const t of md.topics) emit({ event: 'topic', name: t.name, partitions: t.partitions })
        emit({ event: 'topics', topics: await admin.listTopics() })
      })
      break
    case 'delete-topic':
      await withAdmin(kafka, async admin => {
        await admin.deleteTopics({ topics: [o.topic], timeout: 10000 })
        emit({ event: 'deleted', topic: o.topic })
        emit({ event: 'topics', topics: await admin.listTopics() })
      })
      break
    case 'produce':
      await produce(kafka, o)
      break
    case 'transactions':
      await transactions(kafka, o)
      break
    case 'consume':
      // kafkajs consumes only as a group member: a group of its own, nothing committed.
      await consume(kafka, o, `kafkajs-reader-${process.pid}-${Date.now()}`, false)
      break
    case 'group':
      await consume(kafka, o, o.group, !o.hold)
      break
    case 'list-groups':
      await withAdmin(kafka, async admin => {
        const { groups } = await admin.listGroups()
        emit({ event: 'groups', groups: groups.map(g => ({ group_id: g.groupId, protocol_type: g.protocolType })) })
      })
      break
    case 'describe-group':
      await withAdmin(kafka, async admin => {
        const { groups } = await admin.describeGroups([o.group])
        for (const g of groups) {
          emit({
            event: 'group', group_id: g.groupId, error_code: g.errorCode, state: g.state,
            protocol_type: g.protocolType, protocol: g.protocol,
            members: g.members.map(m => {
              const a = m.memberAssignment && m.memberAssignment.length
                ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null
              return { member_id: m.memberId, client_id: m.clientId, assignment: a ? a.assignment : null }
            }),
          })
        }
      })
      break
    case 'group-offsets':
      await withAdmin(kafka, async admin => {
        const topics = await admin.fetchOffsets({ groupId: o.group, topics: [o.topic] })
        for (const t of topics) {
          emit({ event: 'offsets', topic: t.topic,
                 partitions: t.partitions.map(p => ({ partition: p.partition, offset: Number(p.offset) })) })
        }
      })
      break
    default:
      throw new Error(`unknown --mode ${o.mode}`)
  }
  emit({ event: 'done', mode: o.mode })
  process.exit(0)
}

main().catch(fail)
