import { Button } from '@mantine/core';
import { Link } from 'react-router';

import { Empty } from '../components/QueryState';

export function NotFoundPage() {
  return (
    <Empty
      title="No such page"
      description="The address does not match any page of the console."
      action={
        <Button component={Link} to="/admin" mt="md">
          Go to the jobs
        </Button>
      }
    />
  );
}
