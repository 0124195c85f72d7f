import { MemoryWebhookStore } from '../../engine/store/memory/webhooks.ts';
import { webhookStoreContract } from './support/store-contract.ts';

webhookStoreContract('memory', () => new MemoryWebhookStore());
