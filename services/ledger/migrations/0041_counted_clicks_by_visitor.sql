-- The counted clicks a new click is compared with, by visitor (issue 30): the attribution index
-- of clicks by visitor holds the flagged ones too, so a flood of one visitor's duplicates made
-- every later check read them all again. This one holds counted clicks only.
create index tracking_events_counted_clicks_by_visitor on tracking_events (product_id, visitor_id, occurred_at desc)
  where event_type = 'click' and flags is null;
