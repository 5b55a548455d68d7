-- GET /api/v1/subject/:id/transaction_values for one subject (PERSON_ID).
local token = os.getenv("TOKEN")
local id = os.getenv("PERSON_ID")
request = function()
  return wrk.format("GET", "/api/v1/subject/" .. id .. "/transaction_values", { ["Authorization"] = "Bearer " .. token })
end
