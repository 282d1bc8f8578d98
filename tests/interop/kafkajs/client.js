// kafkajs interop scenario: the same records, digest and JSON summary as tests/interop/java InteropClient.
//
//   node client.js --bootstrap B --topic T --count N [--mode produce|consume|produce-consume]
//                  [--partitions P] [--group G] [--timeout-ms MS]
//
// Produces N keyed records with headers (idempotent producer, acks=all, gzip: kafkajs has no built-in lz4),
// partitioned by kafkajs's Java-compatible default partitioner, then reads them back: with --group through a
// consumer group (fromBeginning), otherwise with plain Fetch requests from offset 0 (no group APIs needed).
'use strict'

const crypto = require('crypto')
const { Kafka, CompressionTypes, Partitioners, logLevel } = require('kafkajs')

function parseArgs(argv) {
  const args = {}
  for (let i = 0; i + 1 < argv.length; i += 2) {
    if (!argv[i].startsWith('--')) throw new Error(`expected --name value, got ${argv[i]}`)
    args[argv[i].slice(2)] = argv[i + 1]
  }
  for (const required of ['bootstrap', 'topic']) {
    if (!args[required]) throw new Error(`--${required} is required`)
  }
  return args
}

const hex = buf => (buf == null ? '-' : Buffer.from(buf).toString('hex'))

function line(key, value, headers) {
  const hs = Object.entries(headers || {}).map(([name, v]) => `${name}=${hex(v)}`)
  return `${hex(key)} ${hex(value)} ${hs.join(',')}`
}

function digest(lines) {
  // Java sorts UTF-16 strings; these lines are ASCII so the default JS sort order is identical.
  return crypto.createHash('sha256').update([...lines].sort().join('\n'), 'utf8').digest('hex')
}

function makeRecord(i) {
  return {
    key: Buffer.from(`key-${i}`),
    value: Buffer.from(`value-${i}` + '-pad'.repeat(i % 7)),
    headers: { idx: Buffer.from(String(i)), src: Buffer.from('interop') },
  }
}

async function ensureTopic(kafka, topic, partitions) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }], waitForLeaders: true })
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] })
    return metadata.topics[0].partitions.map(p => ({ partitionId: p.partitionId, leader: p.leader }))
  } finally {
    await admin.disconnect()
  }
}

async function produce(kafka, topic, count, partitions, summary) {
  const partitionMetadata = await ensureTopic(kafka, topic, partitions)
  const partitioner = Partitioners.DefaultPartitioner()
  const byPartition = new Map()
  const lines = []
  for (let i = 0; i < count; i++) {
    const record = makeRecord(i)
    lines.push(line(record.key, record.value, record.headers))
    const partition = partitioner({ topic, partitionMetadata, message: record })
    if (!byPartition.has(partition)) byPartition.set(partition, [])
    byPartition.get(partition).push({ ...record, partition })
  }
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const produced = {}
  try {
    for (const partition of [...byPartition.keys()].sort((a, b) => a - b)) {
      const messages = byPartition.get(partition)
      const result = await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages })
      const first = Number(result[0].baseOffset)
      produced[String(partition)] = { count: messages.length, first_offset: first, last_offset: first + messages.length - 1 }
    }
  } finally {
    await producer.disconnect()
  }
  summary.produced = count
  summary.produced_partitions = produced
  summary.produced_digest = digest(lines)
}

function recordOf(message, partition, state) {
  const offset = Number(message.offset)
  const before = state.previous.get(partition)
  if (before !== undefined && offset <= before) state.outOfOrder++
  state.previous.set(partition, offset)
  state.lastOffset[String(partition)] = offset
  state.lines.push(line(message.key, message.value, message.headers))
}

async function consumeWithGroup(kafka, topic, expected, group, deadline, state) {
  const consumer = kafka.consumer({ groupId: group })
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    let crash = null
    consumer.on(consumer.events.CRASH, event => { crash = event.payload.error })
    await consumer.run({ eachMessage: async ({ partition, message }) => recordOf(message, partition, state) })
    while (state.lines.length < expected && Date.now() < deadline) {
      if (crash) throw crash
      await new Promise(resolve => setTimeout(resolve, 100))
    }
  } finally {
    await consumer.disconnect()
  }
}

async function consumeWithFetch(kafka, topic, expected, deadline, state) {
  // kafkajs has no assign(): drive its (version-pinned) cluster object and send Fetch requests directly.
  const createCluster = Object.getOwnPropertySymbols(kafka).find(s => s.description === 'private:Kafka:createCluster')
  const cluster = kafka[createCluster]({ metadataMaxAge: 300000, allowAutoTopicCreation: false })
  await cluster.connect()
  try {
    await cluster.addTargetTopic(topic)
    const partitions = cluster.findTopicPartitionMetadata(topic).map(p => p.partitionId)
    const next = new Map(partitions.map(p => [p, 0]))
    while (state.lines.length < expected && Date.now() < deadline) {
      const leaders = cluster.findLeaderForPartitions(topic, partitions)
      for (const [nodeId, leaderPartitions] of Object.entries(leaders)) {
        const broker = await cluster.findBroker({ nodeId })
        const response = await broker.fetch({
          replicaId: -1, isolationLevel: 1, maxWaitTime: 200, minBytes: 1, maxBytes: 10485760,
          topics: [{ topic, partitions: leaderPartitions.map(p => ({ partition: p, fetchOffset: String(next.get(p)), maxBytes: 1048576 })) }],
        })
        for (const topicResponse of response.responses) {
          for (const p of topicResponse.partitions) {
            if (p.errorCode !== 0) throw new Error(`Fetch error ${p.errorCode} on partition ${p.partition}`)
            for (const message of p.messages) {
              if (Number(message.offset) < next.get(p.partition)) continue // batch starts before the fetch offset
              recordOf(message, p.partition, state)
              next.set(p.partition, Number(message.offset) + 1)
            }
          }
        }
      }
    }
  } finally {
    await cluster.disconnect()
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const count = Number(args.count || 100)
  const partitions = Number(args.partitions || 3)
  const mode = args.mode || 'produce-consume'
  const timeoutMs = Number(args['timeout-ms'] || 30000)
  const kafka = new Kafka({ clientId: 'minikafka-interop', brokers: args.bootstrap.split(','), logLevel: logLevel.WARN })
  const summary = { client: 'kafkajs', topic: args.topic }
  if (mode.includes('produce')) await produce(kafka, args.topic, count, partitions, summary)
  if (mode.includes('consume')) {
    const state = { lines: [], lastOffset: {}, previous: new Map(), outOfOrder: 0 }
    const deadline = Date.now() + timeoutMs
    if (args.group) await consumeWithGroup(kafka, args.topic, count, args.group, deadline, state)
    else await consumeWithFetch(kafka, args.topic, count, deadline, state)
    summary.consumed = state.lines.length
    summary.last_offset = state.lastOffset
    summary.out_of_order = state.outOfOrder
    summary.digest = digest(state.lines)
  }
  console.log(JSON.stringify(summary))
}

main().catch(err => {
  console.error(err && err.stack ? err.stack : err)
  process.exit(1)
})
