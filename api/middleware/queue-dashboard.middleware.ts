import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import type { Job, Queue } from 'bullmq';
import type { Middleware } from 'koa';
import type { Database } from '../../platform/db.js';
import { jobLabels } from '../../sync/job-labels.js';

export const QUEUE_DASHBOARD_PATH = '/admin/queues';

export const isQueueDashboardPath = (path: string) => path === QUEUE_DASHBOARD_PATH || path.startsWith(`${QUEUE_DASHBOARD_PATH}/`);

/**
 * The bull-board dashboard for every queue the service uses: job details and
 * retrying failed jobs. It is a Koa app of its own mounted at /admin/queues; it
 * does no authentication, so it must be installed behind adminAreaMiddleware.
 */
export function queueDashboardMiddleware(queues: Queue[], db: Database): Middleware {
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((queue) => new NamedJobsAdapter(queue, db)),
    serverAdapter,
    // Set-aside changes and bulk files are not jobs: the dashboard links to their own pages.
    options: {
      uiConfig: {
        boardTitle: 'commerce-sync',
        miscLinks: [
          { text: 'Admin home', url: '/admin' },
          { text: 'Set-aside changes', url: '/admin/set-aside' },
          { text: 'Bulk files', url: '/admin/bulk-jobs' },
        ],
      },
    },
  });
  const dashboard = serverAdapter.registerPlugin() as Middleware;
  return async (ctx, next) => {
    if (!isQueueDashboardPath(ctx.path)) return next();
    await dashboard(ctx, next);
    // The page links a web font from a third-party CDN; an admin page should not call out
    // (and may run where there is no internet). It falls back to the system fonts.
    if (typeof ctx.body === 'string' && ctx.response.is('html'))
      ctx.body = ctx.body.replace(THIRD_PARTY_FONTS, '').replace(/<head>/i, `<head>${WITHOUT_URL_CREDENTIALS}`);
  };
}

/**
 * Shows each job by what it is about: `apply-outbox · shop-a / nl`, `process-bulk · shop-a / nl / file <id>`
 * (sync/job-labels.ts). Only what the dashboard shows changes (the name in the job's JSON): the job keeps
 * its name, which picks its processor, and a job the dashboard retries or duplicates is the job as it was.
 */
class NamedJobsAdapter extends BullMQAdapter {
  constructor(
    queue: Queue,
    private readonly db: Database,
  ) {
    super(queue, { allowRetries: true });
  }

  override async getJobs(...args: Parameters<BullMQAdapter['getJobs']>): Promise<Job[]> {
    return this.named(await super.getJobs(...args));
  }

  override async getJob(id: string): Promise<Job | undefined> {
    const job = await super.getJob(id);
    return job ? (await this.named([job]))[0] : job;
  }

  private async named(jobs: Job[]): Promise<Job[]> {
    // The dashboard lists jobs all the same if Postgres cannot say what they are about.
    const labels = await jobLabels(this.db, jobs.filter(Boolean)).catch(() => new Map<Job, string>());
    for (const [job, label] of labels) {
      const json = job.toJSON.bind(job);
      job.toJSON = () => ({ ...json(), name: label });
    }
    return jobs;
  }
}

const THIRD_PARTY_FONTS = /<link[^>]+href="https:\/\/fonts\.googleapis\.com[^>]*>\s*/g;

/**
 * Opened as http://user:password@host/admin/queues, the page's URL carries the credentials, the
 * dashboard's relative URLs (resolved against `<base href>`) do too, and Chromium refuses fetch() to
 * them: the dashboard would stay on "Loading". Before its scripts run, the page loads itself again
 * at the same address without them; the browser keeps the credentials for the site and sends them.
 */
const WITHOUT_URL_CREDENTIALS =
  '<script>if (/^[a-z][a-z0-9+.-]*:\\/\\/[^/]*@/i.test(document.URL)) location.replace(location.origin + location.pathname + location.search + location.hash);</script>';
