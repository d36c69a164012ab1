/** A bulk job as GET .../bulk/{id} answers it (list items leave out `errors`). */
export interface BulkJob {
  id: string;
  status: 'queued' | 'running' | 'completed' | 'failed';
  lines: number;
  lines_stored: number;
  lines_applied: number;
  saved: number;
  failed: number;
  error: string | null;
  errors: Array<{ line: number; error: unknown }>;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

/** The language's bulk endpoints; jobs of both interfaces are read through v1's. */
export const bulkPath = (language: string, rest = '', api: 'v1' | 'v2' = 'v1') =>
  `/api/${api}/languages/${encodeURIComponent(language)}/bulk${rest}`;

/** Whether any line of the job failed, or the job itself: push and job exit 1 for it. */
export const jobFailed = (job: Pick<BulkJob, 'status' | 'failed'>) => job.status === 'failed' || job.failed > 0;
