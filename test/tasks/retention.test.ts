// The memory store's bound on finished tasks (store.memory_finished_tasks): past it the oldest
// finished task is forgotten first, and its GET answers 404 / 2005 like any unknown task
// (docs/decisions.md, "Task retention"). test/store/tasks.contract.test.ts holds the store to
// never dropping an unsettled task. Memory store only:
// Redis keeps finished tasks for store.task_retention_hours, as key TTLs.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, waitForTask } from '../helpers/gateway.ts';

const D = '/vendors/provider_d/v1/model_d/generation';

describe('finished-task count bound (memory store)', function () {
  this.timeout(30_000);
  let gw: Gateway;
  let key: string;

  before(async () => {
    gw = await startTestGateway({ only: ['provider_d'], store: '{ kind: memory, memory_finished_tasks: 2 }' });
    ({ key } = await newTenant(gw));
  });
  after(() => gw.close());

  /** Create a sandbox task and wait until it is finished, its credits settled. */
  async function finishedTask(): Promise<string> {
    const r = await call(gw.url, 'POST', D, { key, body: { prompt: 'a lighthouse at dusk' } });
    expect(r.status, r.text).to.equal(202);
    const id = r.body.task_info.id as string;
    await waitForTask(gw.url, `${D}/${id}`, key, ['completed']);
    for (let i = 0; !(await gw.tasks.get(id))?.finalized; i++) {
      if (i > 500) throw new Error(`task ${id} never finalized`);
      await new Promise((res) => setTimeout(res, 10));
    }
    return id;
  }

  it('keeps the newest finished tasks and forgets the oldest: its GET answers 404 / 2005', async () => {
    const [first, second, third] = [await finishedTask(), await finishedTask(), await finishedTask()];
    const gone = await call(gw.url, 'GET', `${D}/${first}`, { key });
    expect(gone.status, gone.text).to.equal(404);
    expect(gone.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect(gone.body.error_code).to.equal(2005);
    expect(gone.headers.get('traceparent')).to.be.a('string');
    for (const id of [second, third]) expect((await call(gw.url, 'GET', `${D}/${id}`, { key })).body.task_info).to.include({ id, status: 'completed' });
    // The console's listing forgets it too.
    const listed = await call(gw.url, 'GET', '/v1/tasks', { key });
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body.data.map((t: { task_info: { id: string } }) => t.task_info.id)).to.deep.equal([third, second]);
  });
});
