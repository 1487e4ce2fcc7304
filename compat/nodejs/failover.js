// A RocketMQ 5 producer and SimpleConsumer under a failover, as an
// application would write them with the official Node.js client:
// compat/grpc_node_failover_test.go runs it against `ledgermq dev`'s proxy
// (node failover.js ENDPOINTS TOPIC GROUP SENDERS SECONDS DRAIN_SECONDS)
// and kills the group's leader while it runs.
//
// SENDERS loops each send one message at a time (a unique body) for
// SECONDS; a failed send is counted and followed by a 100 ms pause. The
// consumer (four receive loops, each acknowledging what it got at once)
// receives all along, and after the senders stop it goes on until it has
// received every acknowledged send or DRAIN_SECONDS passed.
// It prints one line {"event":"acked","n":N} once N = 200 sends were
// acknowledged (the test kills the leader then), and at the end one JSON
// object: the acknowledged sends with the time of their answer (ms since
// the epoch), the failed sends with their first errors, and how many times
// each body was received.
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const logger = require('./logger');

const readyAfter = 200;

async function main() {
  const [ endpoints, topic, consumerGroup, sendersArg, secondsArg, drainArg ] = process.argv.slice(2);
  const senders = Number(sendersArg);
  const until = Date.now() + 1000 * Number(secondsArg);
  const producer = new Producer({ endpoints, namespace: '', sslEnabled: false, topic, logger });
  await producer.startup();
  const consumer = new SimpleConsumer({
    endpoints, namespace: '', sslEnabled: false, consumerGroup, logger,
    subscriptions: new Map([ [ topic, '*' ] ]),
    awaitDuration: 2000,
  });
  await consumer.startup();

  const acked = [];
  const errors = [];
  let failed = 0;
  let announced = false;
  const sendLoop = async s => {
    for (let i = 0; Date.now() < until; i++) {
      const body = `s${s}-${i}`;
      try {
        await producer.send({ topic, tag: 'TagF', body: Buffer.from(body) });
        acked.push([ body, Date.now() ]);
        if (!announced && acked.length >= readyAfter) {
          announced = true;
          console.log(JSON.stringify({ event: 'acked', n: acked.length }));
        }
      } catch (err) {
        failed++;
        if (errors.length < 5) {
          errors.push(String(err && err.message || err));
        }
        await new Promise(r => setTimeout(r, 100));
      }
    }
  };

  const received = new Map();
  let sending = true;
  let receiveErrors = 0;
  const receiveLoop = async () => {
    const deadline = until + 1000 * Number(drainArg);
    while (Date.now() < deadline) {
      if (!sending && acked.every(([ body ]) => received.has(body))) {
        return;
      }
      let msgs = [];
      try {
        msgs = await consumer.receive(32, 10000);
      } catch (err) {
        receiveErrors++;
        await new Promise(r => setTimeout(r, 100));
        continue;
      }
      for (const m of msgs) {
        const body = m.body.toString();
        received.set(body, (received.get(body) || 0) + 1);
      }
      // Not acknowledged: it comes back after its invisible time.
      await Promise.all(msgs.map(m => consumer.ack(m).catch(() => {})));
    }
  };

  const receiving = Promise.all([ 0, 1, 2, 3 ].map(() => receiveLoop()));
  await Promise.all(Array.from({ length: senders }, (_, s) => sendLoop(s)));
  sending = false;
  await receiving;
  await producer.shutdown();
  await consumer.shutdown();
  console.log(JSON.stringify({ acked, failed, errors, receiveErrors, received: Object.fromEntries(received) }));
}

main().catch(err => {
  console.error('failover failed:', err);
  process.exit(1);
});
