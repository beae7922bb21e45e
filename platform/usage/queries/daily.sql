-- A tenant's counters of a period summed per UTC day, oldest first: the
-- days with no row are left out.
SELECT day, sum(used) AS used, sum(sent) AS sent, sum(delivered) AS delivered, sum(read) AS read,
       sum(failed) AS failed, sum(received) AS received
  FROM ?schema.daily_usage WHERE day BETWEEN ?from::date AND ?to::date
 GROUP BY day ORDER BY day
