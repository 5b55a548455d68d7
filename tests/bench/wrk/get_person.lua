-- GET /api/v1/subject/people/:id for one existing person (PERSON_ID).
local token = os.getenv("TOKEN")
local id = os.getenv("PERSON_ID")
request = function()
  return wrk.format("GET", "/api/v1/subject/people/" .. id, { ["Authorization"] = "Bearer " .. token })
end
