// The public receiver helper: what a customer's server runs to check a webhook delivery.
//
// Verify the RAW body bytes (never a re-serialized object), then deduplicate on the delivery
// id (`X-Service-Webhook-Id` is the same on every retry of one delivery). With express:
//
//   import express from 'express';
//   import { verifyWebhook, WebhookVerificationError } from './receiver.ts';
//
//   const seen = new Set<string>(); // use a durable store with a TTL in production
//   app.post('/hooks/gateway', express.raw({ type: 'application/json' }), (req, res) => {
//     let event;
//     try {
//       event = verifyWebhook(req.body, req.headers, process.env.WHSEC!); // req.body is a Buffer
//     } catch (err) {
//       if (err instanceof WebhookVerificationError) return res.status(400).send(err.reason);
//       throw err;
//     }
//     const deliveryId = req.get('X-Service-Webhook-Id')!;
//     if (seen.has(deliveryId)) return res.sendStatus(200); // a retry we already handled
//     seen.add(deliveryId);
//     // Branch on the type prefix before reading data: 'task.' or 'balance.'
//     res.sendStatus(200); // answer 2xx quickly; do slow work afterwards
//   });
//
// Options: `toleranceSeconds` (default 300, applied both ways) and `now` (ms, for tests).
export {
  verifyWebhook,
  signPayload,
  WebhookVerificationError,
  HEADER_ID,
  HEADER_TIMESTAMP,
  HEADER_SIGNATURE,
  DEFAULT_TOLERANCE_SECONDS,
} from './signature.ts';
export type { VerificationFailure, VerifyOptions, HeaderBag } from './signature.ts';
