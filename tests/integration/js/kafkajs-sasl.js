// kafkajs over SASL (optionally inside TLS): produce three records, consume them in a group,
// commit. Prints one JSON line: {"ok": true, "values": [...], "committed": "3"} or
// {"ok": false, "error": "<name>: <message>"}.
// usage: node kafkajs-sasl.js BROKER MECHANISM USER PASSWORD TOPIC GROUP [CA_FILE [CERT KEY]]
// MECHANISM "none": no SASL (TLS only, with the client certificate CERT/KEY if given).
"use strict";
const fs = require("fs");
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [broker, mechanism, username, password, topic, groupId, ca, cert, key] =
    process.argv.slice(2);
  const ssl = ca ? { ca: [fs.readFileSync(ca, "utf-8")], servername: "localhost" } : false;
  if (ssl && cert) {
    ssl.cert = fs.readFileSync(cert, "utf-8");
    ssl.key = fs.readFileSync(key, "utf-8");
  }
  const kafka = new Kafka({
    clientId: "kafkajs-sasl",
    brokers: [broker],
    ssl,
    sasl: mechanism === "none" ? undefined : { mechanism: mechanism.toLowerCase(), username, password },
    logLevel: logLevel.NOTHING,
    retry: { retries: password === "wrong" ? 0 : 5 },
    connectionTimeout: 10000,
  });
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic,
    messages: [0, 1, 2].map((i) => ({ key: "k", value: `v${i}` })),
  });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const values = [];
  let partition = 0;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("timed out consuming")), 20000);
    consumer
      .run({
        autoCommit: false,
        eachMessage: async ({ partition: p, message }) => {
          values.push(message.value.toString());
          partition = p;
          if (values.length === 3) {
            clearTimeout(timer);
            resolve();
          }
        },
      })
      .catch(reject);
  });
  await consumer.commitOffsets([{ topic, partition, offset: "3" }]);
  const admin = kafka.admin();
  await admin.connect();
  const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
  await admin.disconnect();
  await consumer.disconnect();
  const committed = offsets[0].partitions.find((x) => x.partition === partition).offset;
  console.log(JSON.stringify({ ok: true, values, committed }));
}

main().catch((e) => {
  console.log(JSON.stringify({ ok: false, error: `${e.name}: ${e.message}` }));
  process.exit(0);
});
