-- wrk: POST /v1/documents with a small JSON body (bench/backup.sh's writers).
wrk.method = "POST"
wrk.body = '{"name": "written during a backup"}'
wrk.headers["Content-Type"] = "application/json"
