"""Reports: the class summary and table, feedback pages, LMS exports, item analysis and the
dashboard, all read from the gradebook."""
